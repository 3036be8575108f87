import HeraldDomain

/// A topic as a request names it, parsed once, at the route: its text (what the hub, the leases and a
/// problem's detail use) and its form, which the access check, the subject check and the display style
/// read (nil: no topic's form, a 400 once the caller is let through).
struct NamedTopic: Sendable {
    let text: String
    let topic: Topic?

    init(_ text: String) {
        self.text = text
        topic = Topic(text)
    }
}

/// A subject's name as streams, tokens and events spell it (`currency`, `units`, `auctions/7`,
/// `trips/ice-1`, `units/scout`, `notifications/door.front`), read by this one parser.
enum Topic: Hashable, Sendable, CustomStringConvertible {
    case currency
    /// Every auction and trip: collections.
    case auctions, trips
    /// An auction, by the id the topic names (which may name none: 404, not 400).
    case auction(String)
    case trip(String)
    case notification(String)
    /// A keyed kind's collection (`units`), and one of its records (`units/scout`): the kinds in
    /// `Registry.keyed`.
    case keyed(String)
    case record(String, id: String)

    /// Whether the topic is a collection (`auctions`, `trips`, `units`).
    var isCollection: Bool {
        switch self {
        case .auctions, .trips, .keyed: true
        default: false
        }
    }

    /// The topic `text` spells; nil when it is no topic's form (`currency/`, `/units`, `auctions/`,
    /// `units/a b`, `notifications/..`): no event could ever come to it.
    init?(_ text: some StringProtocol) {
        self.init(String(text))
    }

    /// The same, read as bytes: every stream's head parses its topics twice (the check and the
    /// stream), and the generic, `split` and pattern-matched form cost 4 % of a subscription's CPU.
    init?(_ text: String) {
        let bytes = text.utf8
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else {
            switch text {
            case "currency": self = .currency
            case "auctions": self = .auctions
            case "trips": self = .trips
            case _ where Registry.keyedKind(text) != nil: self = .keyed(text)
            default: return nil
            }
            return
        }
        let rest = text[bytes.index(after: slash)...]
        guard !rest.isEmpty, !rest.utf8.contains(UInt8(ascii: "/")) else { return nil }
        switch text[..<slash] {
        case "auctions": self = .auction(String(rest))
        case "trips": self = .trip(String(rest))
        case "notifications" where Self.isNotificationName(rest): self = .notification(String(rest))
        case let collection:
            let id = String(rest)
            guard let kind = Registry.keyedKind(collection), kind.isValidId(id) else { return nil }
            self = .record(kind.collection, id: id)
        }
    }

    var description: String {
        switch self {
        case .currency: "currency"
        case .auctions: "auctions"
        case .trips: "trips"
        case .keyed(let collection): collection
        case .auction(let id): "auctions/\(id)"
        case .trip(let id): "trips/\(id)"
        case .record(let collection, let id): collection + "/" + id
        case .notification(let name): "notifications/\(name)"
        }
    }

    /// Whether `name` may name notifications: 1–100 characters of letters, digits, `.`, `_` and `-`,
    /// and not `.` or `..` (which no client can put in a path).
    static func isNotificationName(_ name: some StringProtocol) -> Bool {
        name != "." && name != ".." && (1...100).contains(name.utf8.count) && name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D || c == 0x2E
        }
    }
}
