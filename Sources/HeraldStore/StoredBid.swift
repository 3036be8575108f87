/// One bid as stored: its number within its auction (1, 2, …), who, how much, when.
public struct StoredBid: Sendable, Equatable {
    public let number: Int
    public let bidder: String
    public let amount: Int64
    public let at: String

    public init(number: Int, bidder: String, amount: Int64, at: String) {
        self.number = number
        self.bidder = bidder
        self.amount = amount
        self.at = at
    }
}
