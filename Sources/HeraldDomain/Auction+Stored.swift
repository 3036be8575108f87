public import Foundation

extension Auction {
    /// An auction as it was stored: its fields, its bids in order, and its countdown's deadline.
    public init(id: AuctionID, item: String, startingPrice: Int64, currency: Currency = .dollar, createdAt: Date, status: Status,
                countdownSeconds: Int, deadline: Date?, winner: String?, closedAt: Date?, bids: [Bid]) {
        self.init(id: id, item: item, countdownSeconds: countdownSeconds, startingPrice: startingPrice, currency: currency, createdAt: createdAt)
        self.status = status
        self.winner = winner
        self.closedAt = closedAt
        self.bids = BidList(bids)
        countdown = Countdown(seconds: countdownSeconds, deadline: deadline)
    }
}

extension Bid {
    public init(number: Int, bidder: String, amount: Int64, at: Date) {
        self.init(number: BidNumber(number), bidder: bidder, amount: amount, at: at)
    }
}
