public import Foundation

/// One accepted bid.
public struct Bid: Sendable, Equatable {
    public let number: BidNumber
    public let bidder: String
    public let amount: Int64
    public let at: Date
}

/// An auction: the rules of bidding, without timers. `AuctionHouse` drives its countdown.
public struct Auction: Sendable {
    public enum Status: String, Sendable, CaseIterable { case open, closed }

    public let id: AuctionID
    public let item: String
    public let startingPrice: Int64
    /// What its amounts are minor units of, fixed when it opens.
    public let currency: Currency
    public let createdAt: Date
    public internal(set) var status = Status.open
    public internal(set) var bids = BidList()
    public internal(set) var winner: String?
    public internal(set) var closedAt: Date?
    public var countdown: Countdown

    public init(id: AuctionID, item: String, countdownSeconds: Int, startingPrice: Int64, currency: Currency = .dollar, createdAt: Date) {
        self.id = id
        self.item = item
        self.startingPrice = startingPrice
        self.currency = currency
        self.createdAt = createdAt
        self.countdown = Countdown(seconds: countdownSeconds)
    }

    /// The current price: the last bid, or the starting price before any.
    public var price: Int64 { bids.last?.amount ?? startingPrice }
    public var leader: String? { bids.last?.bidder }
    /// The lowest amount the next bid may have.
    public var minimumBid: Int64 { bids.isEmpty ? startingPrice : price + 1 }

    /// Accepts a bid if the auction is open and the amount is high enough.
    public mutating func place(bidder: String, amount: Int64, at now: Date) throws(DomainError) -> Bid {
        guard status == .open else {
            throw DomainError(.conflict, "auction '\(id)' is closed",
                              auction: AuctionConflict(price: price, minimumBid: nil, closed: true, winner: winner))
        }
        guard amount >= minimumBid else {
            let rule = bids.isEmpty ? "at least the starting price \(startingPrice)" : "higher than the current price \(price)"
            throw DomainError(.conflict, "a bid of \(amount) is too low: it must be \(rule)",
                              auction: AuctionConflict(price: price, minimumBid: minimumBid, closed: false, winner: nil))
        }
        let bid = Bid(number: BidNumber(bids.count + 1), bidder: bidder, amount: amount, at: now)
        bids.append(bid)
        return bid
    }

    /// Closes the auction; the last bidder wins.
    public mutating func close(at now: Date) {
        guard status == .open else { return }
        status = .closed
        winner = leader
        closedAt = now
    }
}

/// Amounts of money: integers in minor units, at most 2^53 − 1 so that every JSON client reads them exactly.
public enum Money {
    public static let maximum: Int64 = 9_007_199_254_740_991
}

/// A request to create an auction, checked.
public struct NewAuction: Sendable, Equatable {
    public let item: String
    public let countdownSeconds: Int
    public let startingPrice: Int64
    /// nil: the default currency when it opens.
    public let currency: Currency?

    public init(item: String, countdownSeconds: Int = 7, startingPrice: Int64 = 0, currency: Currency? = nil) {
        self.item = item
        self.countdownSeconds = countdownSeconds
        self.startingPrice = startingPrice
        self.currency = currency
    }
}

/// A request to bid, checked.
public struct NewBid: Sendable, Equatable {
    public let bidder: String
    public let amount: Int64

    public init(bidder: String, amount: Int64) {
        self.bidder = bidder
        self.amount = amount
    }
}
