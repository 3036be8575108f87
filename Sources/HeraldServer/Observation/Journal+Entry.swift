import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON

/// A piece of state to keep across restarts: `document` is all it takes to restore it.
struct Record: Sendable {
    let kind: String
    let id: String
    private let render: @Sendable () -> [UInt8]?

    /// The state as JSON, or nil when it is gone. Rendered when asked for, so a server without a store
    /// never pays for it.
    var document: [UInt8]? { render() }

    init(kind: String, id: String, document: @autoclosure @escaping @Sendable () -> JSONValue?) {
        self.kind = kind
        self.id = id
        self.render = { document()?.bytes }
    }

    /// One whose JSON is written without making a `JSONValue` first.
    init(kind: String, id: String, bytes: @autoclosure @escaping @Sendable () -> [UInt8]) {
        self.kind = kind
        self.id = id
        self.render = { bytes() }
    }
}

/// One entry of a collection subject (such as one unit in `units`), with the values its observers'
/// filters look at (`status=open`).
struct Member: Sendable {
    let collection: String
    let key: String
    let value: JSONValue?
    var values: [FilterValue] = []

    /// An auction in `auctions`: filtered by `status`.
    static func auction(_ auction: Auction, json: JSONValue) -> Member {
        Member(collection: AuctionHouse.collectionTopic, key: auction.id.description, value: json, values: filterValues(auction))
    }

    /// A trip in `trips`: filtered by `delayed`.
    static func trip(_ trip: Trip, json: JSONValue) -> Member {
        Member(collection: TripBoard.collectionTopic, key: trip.id.description, value: json, values: filterValues(trip))
    }

    static func filterValues(_ auction: Auction) -> [FilterValue] { FilterValue.of(auction) }
    static func filterValues(_ trip: Trip) -> [FilterValue] { FilterValue.of(trip) }
}

extension EventName {
    /// An auction's full state, as `auctions` observers get every change of one (and its opening).
    static let auction: EventName = "auction"
    static let bid: EventName = "bid"
    /// A countdown's second: news of the moment, never stored.
    static let tick: EventName = "tick"
    static let closed: EventName = "closed"
    static let unit: EventName = "unit"
    static let removed: EventName = "removed"
    static let currency: EventName = "currency"
    static let trip: EventName = "trip"
    static let notification: EventName = "notification"
}

extension Journal {
    /// Record kinds in the store (and each keyed kind's noun).
    enum RecordKind {
        static let trip = "trip"
        static let currency = "currency"
    }

    /// One change as the journal stores and publishes it: its event (name and payload), the values and
    /// collection members it changes, and what the store keeps of it.
    struct Entry: Sendable {
        /// The subject the change belongs to, such as `auctions/7`.
        let topic: String
        /// The event's name, such as `bid`; nil for a change observers are not told of (a new auction).
        let event: EventName?
        /// The event's payload (without its topic).
        var payload: JSONValue = [:]
        /// Labels an observer's filter may use (changed field names, posting object).
        var tags: [String] = []
        /// Subjects whose current value changes: topic and new snapshot payload (nil: gone).
        var values: [(topic: String, value: JSONValue?)] = []
        var members: [Member] = []
        var records: [Record] = []
        /// An auction whose fields to store, and the bid it added (appended).
        var auction: Auction?
        var newBid: Bid?
        /// False for news of the moment (a countdown's tick): published, never stored, never replayed.
        var durable = true
    }

    /// How a domain event is published and stored. Payloads show domain values as clients see them
    /// (`Presentation.swift`); trip strings are in `DisplayStyle.events`.
    static func entry(for event: DomainEvent, at now: Date) -> Entry {
        switch event {
        case .auctionOpened(let auction):
            let topic = AuctionHouse.topic(auction.id), json = JSONValue.encoded(auction.json(at: now).bytes)
            return Entry(topic: topic, event: .auction, payload: ["auction": json],
                         tags: CollectionKind.auctions.changedFields.all + Membership.tags(before: nil, after: Member.filterValues(auction)),
                         values: [(topic, ["auction": json])], members: [.auction(auction, json: json)], auction: auction)
        case .bidPlaced(let bid, let auction):
            // Written once, and copied into the event, the auction's current value and the bid's answer.
            let topic = AuctionHouse.topic(auction.id), json = JSONValue.encoded(auction.json(at: now).bytes)
            return Entry(topic: topic, event: .bid, payload: ["bid": bid.json, "auction": json],
                         tags: ChangedFields.bid(on: auction) + Membership.tags(before: [.open], after: Member.filterValues(auction)),
                         values: [(topic, ["auction": json])], members: [.auction(auction, json: json)], auction: auction, newBid: bid)
        case .countdownTicked(let auction, let remaining):
            let topic = AuctionHouse.topic(auction.id)
            return Entry(topic: topic, event: .tick, payload: [
                "auctionId": .string(auction.id.description), "remainingSeconds": .integer(remaining),
                "price": .int(auction.price), "currency": .string(auction.currency.rawValue), "leader": .optional(auction.leader),
                "deadline": Timestamp.json(auction.countdown.deadline),
            ], values: [(topic, ["auction": auction.json(at: now)])], durable: false)
        case .auctionClosed(let auction):
            let topic = AuctionHouse.topic(auction.id), json = JSONValue.encoded(auction.json(at: now).bytes)
            return Entry(topic: topic, event: .closed, payload: ["auction": json, "winner": .optional(auction.winner)],
                         tags: ChangedFields.closing(auction) + Membership.tags(before: [.open], after: Member.filterValues(auction)),
                         values: [(topic, ["auction": json])], members: [.auction(auction, json: json)], auction: auction)
        case .recordSaved(let record, let previous):
            guard let entry = Registry.keyedKind(type(of: record).collection)?.saved(record, previous: previous) else { unregistered(record) }
            return entry
        case .recordRemoved(let record):
            guard let entry = Registry.keyedKind(type(of: record).collection)?.removed(record) else { unregistered(record) }
            return entry
        case .currencyChanged(let currency, let previous):
            return Entry(topic: CurrencySetting.topic, event: .currency,
                         payload: ["default": .string(currency.rawValue), "previous": .string(previous.rawValue)],
                         values: [(CurrencySetting.topic, currency.json)],
                         records: [Record(kind: RecordKind.currency, id: "default", document: ["default": .string(currency.rawValue)])])
        case .tripAdded(let trip):
            let topic = TripBoard.topic(trip.id), json = JSONValue.encoded(trip.json(style: .events).bytes)
            return Entry(topic: topic, event: .trip, payload: ["trip": json, "changed": []],
                         tags: Membership.tags(before: nil, after: Member.filterValues(trip)), values: [(topic, ["trip": json])],
                         members: [.trip(trip, json: json)], records: [Record(kind: RecordKind.trip, id: trip.id.description, document: trip.document)])
        case .tripMoved(let trip, let changed):
            let topic = TripBoard.topic(trip.id), json = JSONValue.encoded(trip.json(style: .events).bytes)
            // Whether it was delayed before: the flag flipped if `delayed` is among the changed fields.
            let wasDelayed = changed.contains(.delayed) ? !trip.delayed : trip.delayed
            let before = FilterValue(field: "delayed", value: wasDelayed ? "true" : "false")
            return Entry(topic: topic, event: .trip, payload: ["trip": json, "changed": .array(changed.map { .string($0.rawValue) })],
                         tags: changed.map(\.rawValue)
                            + Membership.tags(before: [before], after: Member.filterValues(trip)),
                         values: [(topic, ["trip": json])], members: [.trip(trip, json: json)],
                         records: [Record(kind: RecordKind.trip, id: trip.id.description, document: trip.document)])
        }
    }

    /// A record whose kind is in no `Registry.keyed` entry: a build that forgot to declare it, which
    /// `CollectionRegistryTests` catches before a user could.
    static func unregistered(_ record: any KeyedRecord) -> Never {
        preconditionFailure("\(type(of: record)) is not declared in Registry.keyed")
    }
}
