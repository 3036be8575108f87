import HeraldCore
import HeraldDomain

/// The fields of a subject that `?fields=` may name, and which of them an event changed. An event
/// carries the names of the fields it changed among its tags (`Journal.entry`), and a stream that
/// names fields gets only those of its subject's events that changed one of them.
struct ChangedFields: Sendable {
    /// The subject's collection, as errors name it.
    let name: String
    let fields: Set<String>
    /// The events of the subject whose tags say what changed (the others carry no fields).
    let events: Set<EventName>
    /// `fields` in order: what a new member changed.
    let all: [String]

    init(name: String, fields: Set<String>, events: Set<EventName>) {
        (self.name, self.fields, self.events) = (name, fields, events)
        all = fields.sorted()
    }

    /// The kinds among `topics` that have fields, each once, in the registry's order.
    static func subjects(of topics: [String]) -> [ChangedFields] {
        let kinds = Set(topics.compactMap { CollectionKind(topic: Topic($0)) })
        return CollectionKind.allCases.filter(kinds.contains).map(\.changedFields)
    }

    /// What a bid changed: the price, the count and the deadline always; the leader when another bidder led.
    static func bid(on auction: Auction) -> [String] {
        let previous = auction.bids.count >= 2 ? auction.bids[auction.bids.count - 2].bidder : nil
        return ["price", "bidCount", "deadline"] + (previous == auction.leader ? [] : ["leader"])
    }

    /// What closing an auction changed.
    static func closing(_ auction: Auction) -> [String] {
        ["status"] + (auction.winner == nil ? [] : ["winner"])
    }
}
