/// An auction's own fields as stored (times in RFC 3339, money in minor units). Its bids are rows of
/// their own: a bid is appended, never rewritten with the auction.
public struct StoredAuction: Sendable, Equatable {
    public let id: String
    public let item: String
    public let startingPrice: Int64
    /// The currency's name (`Currency`'s raw value).
    public let currency: String
    public let createdAt: String
    public let status: String
    public let countdownSeconds: Int
    public let deadline: String?
    public let winner: String?
    public let closedAt: String?
    /// Filled when loading; not written with the auction. When catching up (`StoredChanges`), only the
    /// bids that were missed.
    public var bids: [StoredBid]
    /// When catching up: how many bids the auction has in all (those missed are the last of them).
    public var bidCount: Int?

    public init(id: String, item: String, startingPrice: Int64, currency: String, createdAt: String, status: String, countdownSeconds: Int,
                deadline: String?, winner: String?, closedAt: String?, bids: [StoredBid] = []) {
        self.id = id
        self.item = item
        self.startingPrice = startingPrice
        self.currency = currency
        self.createdAt = createdAt
        self.status = status
        self.countdownSeconds = countdownSeconds
        self.deadline = deadline
        self.winner = winner
        self.closedAt = closedAt
        self.bids = bids
    }
}
