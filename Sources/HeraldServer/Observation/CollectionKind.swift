import HeraldCore
import HeraldDomain

/// Each collection subject, declared once: its topic, what its snapshot's array and its members' event
/// are called, the fields its members are filtered by (each with the values it takes), and the fields
/// `?fields=` may follow. The hub's collections, the routes' filters, the lobby tags and `fields=` read
/// it here. Auctions and trips are declared below; every keyed kind (`Registry.keyed`) declares its
/// own. `CollectionRegistryTests` checks what the compiler cannot (its lobby opens with its pattern
/// grant, its members restore after a restart, `openapi.yaml` documents its filters).
struct CollectionKind: Sendable, Hashable, CustomStringConvertible {
    /// The collection's topic, and the prefix of its members' (`auctions/7`).
    let topic: String
    /// The event a member's change comes as on the collection.
    let itemEvent: EventName
    /// The filter fields, each with the values it takes (`/auctions/events?status=open`).
    let filterFields: [String: [String]]
    /// The fields `?fields=` may name for this kind's subjects, and the events whose tags say which
    /// of them changed (the others carry no fields).
    let changedFields: ChangedFields

    static let auctions = CollectionKind(
        topic: AuctionHouse.collectionTopic, itemEvent: .auction, filterFields: ["status": Auction.Status.allCases.map(\.rawValue)],
        changedFields: ChangedFields(name: AuctionHouse.collectionTopic, fields: ["price", "leader", "bidCount", "deadline", "status", "winner"],
                                     events: [.auction, .bid, .closed, .tick]))
    static let trips = CollectionKind(
        topic: TripBoard.collectionTopic, itemEvent: .trip, filterFields: ["delayed": ["true", "false"]],
        changedFields: ChangedFields(name: TripBoard.collectionTopic, fields: Set(Trip.Field.allCases.map(\.rawValue)), events: [.trip]))

    /// Every collection, in the order `fields=` answers them.
    static let allCases: [CollectionKind] = [auctions, trips] + Registry.keyed.map { $0.collectionKind }

    /// The kind whose collection `topic` is, or whose member it names.
    init?(topic: Topic?) {
        let collection: String
        switch topic {
        case .auctions?, .auction?: collection = AuctionHouse.collectionTopic
        case .trips?, .trip?: collection = TripBoard.collectionTopic
        case .keyed(let name)?, .record(let name, _)?: collection = name
        case .currency?, .notification?, nil: return nil
        }
        guard let kind = Self.allCases.first(where: { $0.topic == collection }) else { return nil }
        self = kind
    }

    init(topic: String, itemEvent: EventName, filterFields: [String: [String]], changedFields: ChangedFields) {
        (self.topic, self.itemEvent, self.filterFields, self.changedFields) = (topic, itemEvent, filterFields, changedFields)
    }

    /// The array a snapshot holds (`{"topic":"auctions","auctions":[…]}`).
    var arrayName: String { topic }

    /// The grant pattern that covers every member, and so the lobby (`auctions/*`).
    var memberPattern: String { topic + "/*" }

    var description: String { topic }

    static func == (a: CollectionKind, b: CollectionKind) -> Bool { a.topic == b.topic }
    func hash(into hasher: inout Hasher) { hasher.combine(topic) }
}

/// The values auctions and trips yield to their lobbies' filters.
extension FilterValue {
    static func of(_ auction: Auction) -> [FilterValue] { [FilterValue(field: "status", value: auction.status.rawValue)] }
    static func of(_ trip: Trip) -> [FilterValue] { [FilterValue(field: "delayed", value: trip.delayed ? "true" : "false")] }
    /// An auction before a bid or its close: open.
    static let open = FilterValue(field: "status", value: Auction.Status.open.rawValue)
}
