import HeraldThreads
import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON
import HeraldStore
import Logging
import Synchronization

// How changes are written for the store and the hub: refusals, stored auctions and bids, event data.
extension Journal {
    /// What a client is told when its change could not be stored: 503 with `Retry-After` when the
    /// store cannot write now (another writer, a full disk, a read-only file), 500 when it is damaged.
    /// The log gets the database's message and code.
    static func refusal(for error: StoreError, topic: String) -> DomainError {
        let (kind, message): (DomainError.Kind, String) = switch error.kind {
        case .busy: (.unavailable, "the store is busy with another writer, so the change was not made; try again")
        case .full: (.unavailable, "the store's disk is full, so the change was not made; try again later")
        case .readOnly: (.unavailable, "the store cannot be written, so the change was not made; try again later")
        case .unreachable: (.unavailable, "the database cannot be reached, so the change was not made; try again later")
        case .corrupt, .other: (.failed, "the change could not be stored, so it was not made")
        }
        return DomainError(kind, message, cause: "store commit failed on \(topic): \(error)")
    }

    static func updates(_ values: [(topic: String, value: JSONValue?)], _ members: [Member]) -> [Hub.Update] {
        values.map { entry in Hub.Update(topic: entry.topic, value: entry.value.map { data(topic: entry.topic, payload: $0) }) }
            + members.map { Hub.Update.member(of: $0.collection, key: $0.key, value: $0.value?.bytes, values: $0.values) }
    }

    /// An auction's fields as the store keeps them.
    static func stored(_ auction: Auction) -> StoredAuction {
        var stored = StoredAuction(id: auction.id.description, item: auction.item, startingPrice: auction.startingPrice,
                                   currency: auction.currency.rawValue, createdAt: Timestamp.format(auction.createdAt), status: auction.status.rawValue,
                                   countdownSeconds: auction.countdown.seconds, deadline: auction.countdown.deadline.map(Timestamp.format),
                                   winner: auction.winner, closedAt: auction.closedAt.map(Timestamp.format))
        // Other replicas check the bids they take in against it.
        stored.bidCount = auction.bids.count
        return stored
    }

    static func stored(_ bid: Bid) -> StoredBid {
        StoredBid(number: bid.number.number, bidder: bid.bidder, amount: bid.amount, at: Timestamp.format(bid.at))
    }

    /// An auction as it was stored; nil when a field does not read.
    static func auction(_ stored: StoredAuction) -> Auction? {
        guard let id = AuctionID(stored.id), let createdAt = Timestamp.parse(stored.createdAt),
              let status = Auction.Status(rawValue: stored.status), let currency = Currency(rawValue: stored.currency) else { return nil }
        var bids: [Bid] = []
        for bid in stored.bids {
            guard let at = Timestamp.parse(bid.at) else { return nil }
            bids.append(Bid(number: bid.number, bidder: bid.bidder, amount: bid.amount, at: at))
        }
        return Auction(id: id, item: stored.item, startingPrice: stored.startingPrice, currency: currency, createdAt: createdAt, status: status,
                       countdownSeconds: stored.countdownSeconds, deadline: stored.deadline.flatMap(Timestamp.parse),
                       winner: stored.winner, closedAt: stored.closedAt.flatMap(Timestamp.parse), bids: bids)
    }

    /// `{"topic": …, …payload}`.
    static func data(topic: String, payload: JSONValue) -> [UInt8] { event(topic: topic, payload: payload).data }

    /// `{"topic": …, …payload}`, and where the payload's members start in it (past the topic's comma).
    static func event(topic: String, payload: JSONValue) -> (data: [UInt8], members: Int) {
        let members: [(String, JSONValue)]
        if case .object(let payloadMembers) = payload { members = payloadMembers } else { members = [("value", payload)] }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        JSONValue.object([("topic", .string(topic))]).write(to: &out)
        out.removeLast()  // its `}`
        let start = out.count + 1
        JSONValue.object(members).write(to: &out)
        out[start - 1] = UInt8(ascii: members.isEmpty ? "}" : ",")
        if members.isEmpty { out.removeLast() }
        return (out, start)
    }
}
