import HeraldCore
import HeraldDomain

/// Each collection subject, declared once: its topic, what its snapshot's array and its members' event
/// are called, the fields its members are filtered by (each with the values it takes, and how a member
/// yields them), and the fields `?fields=` may follow. The hub's collections, the routes' filters, the
/// lobby tags and `fields=` read it here; a kind added to the enum is named by the compiler in every
/// `switch` below, and `CollectionRegistryTests` checks what the compiler cannot (its lobby opens with
/// its pattern grant, its members restore after a restart, `openapi.yaml` documents its filters).
enum CollectionKind: CaseIterable, Sendable {
    case auctions, trips, units

    /// The collection's topic, and the prefix of its members' (`auctions/7`).
    var topic: String {
        switch self {
        case .auctions: AuctionHouse.collectionTopic
        case .trips: TripBoard.collectionTopic
        case .units: UnitStore.collectionTopic
        }
    }

    /// The kind whose collection `topic` is, or whose member it names.
    init?(topic: Topic?) {
        switch topic {
        case .auctions?, .auction?: self = .auctions
        case .trips?, .trip?: self = .trips
        case .units?, .unit?: self = .units
        case .currency?, .notification?, nil: return nil
        }
    }

    /// The array a snapshot holds (`{"topic":"auctions","auctions":[…]}`).
    var arrayName: String { topic }

    /// The event a member's change comes as on the collection.
    var itemEvent: EventName {
        switch self {
        case .auctions: .auction
        case .trips: .trip
        case .units: .unit
        }
    }

    /// The filter fields, each with the values it takes (`/auctions/events?status=open`).
    var filterFields: [String: [String]] {
        switch self {
        case .auctions: ["status": Auction.Status.allCases.map(\.rawValue)]
        case .trips: ["delayed": ["true", "false"]]
        case .units: ["status": HeraldDomain.Unit.Status.allCases.map(\.rawValue)]
        }
    }

    /// The fields `?fields=` may name for this kind's subjects, and the events whose tags say which
    /// of them changed (the others carry no fields).
    var changedFields: ChangedFields {
        switch self {
        case .auctions: Self.auctionFields
        case .trips: Self.tripFields
        case .units: Self.unitFields
        }
    }

    // Made once: a change's entry reads them (every field of a new auction or unit).
    private static let auctionFields = ChangedFields(name: AuctionHouse.collectionTopic,
                                                     fields: ["price", "leader", "bidCount", "deadline", "status", "winner"],
                                                     events: [.auction, .bid, .closed, .tick])
    private static let tripFields = ChangedFields(name: TripBoard.collectionTopic, fields: Set(Trip.Field.allCases.map(\.rawValue)),
                                                  events: [.trip])
    private static let unitFields = ChangedFields(name: UnitStore.collectionTopic, fields: ["name", "status"], events: [.unit])

    /// The grant pattern that covers every member, and so the lobby (`auctions/*`).
    var memberPattern: String { topic + "/*" }
}

/// A value a collection's filter looks at, as a member yields it (`status=open`): its stored form is
/// `field=value`, inside the `was:`/`is:` tags of `Membership`.
struct FilterValue: Sendable, Hashable {
    let field: String
    let value: String

    var tag: String { field + "=" + value }

    static func of(_ auction: Auction) -> [FilterValue] { [FilterValue(field: "status", value: auction.status.rawValue)] }
    static func of(_ trip: Trip) -> [FilterValue] { [FilterValue(field: "delayed", value: trip.delayed ? "true" : "false")] }
    static func of(_ unit: HeraldDomain.Unit) -> [FilterValue] { [FilterValue(field: "status", value: unit.status.rawValue)] }
    /// An auction before a bid or its close: open.
    static let open = FilterValue(field: "status", value: Auction.Status.open.rawValue)
}
