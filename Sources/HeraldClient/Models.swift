import Foundation

// Herald's documented JSON (openapi.yaml, `components/schemas`), as the client's own Codable models.
// The server's domain types stay the server's: these decode what it sends, and `HeraldClientModelTests`
// decodes every example in openapi.yaml with them. Times stay the strings Herald sends (RFC 3339,
// UTC, to the millisecond); `HeraldClient.date(_:)` reads one.

/// An auction: bids raise its price; a countdown runs from the first bid and restarts on every bid;
/// at zero the leader wins. Amounts are in minor units of the auction's `currency` (cents, milligrams).
public struct Auction: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable { case open, closed }
    public var id: String
    public var item: String
    public var status: Status
    /// The last bid, or the starting price.
    public var price: Int
    public var startingPrice: Int
    /// What the amounts are minor units of, fixed when the auction opened.
    public var currency: Currency
    public var leader: String?
    public var bidCount: Int
    public var countdownSeconds: Int
    /// Nil until the first bid and once closed.
    public var remainingSeconds: Int?
    /// When the countdown ends; nil until the first bid and once closed. Count down from it.
    public var deadline: String?
    public var winner: String?
    public var createdAt: String
    public var closedAt: String?
}

/// One accepted bid.
public struct Bid: Codable, Hashable, Sendable {
    public var id: String
    public var bidder: String
    public var amount: Int
    public var at: String
}

/// The answer to a bid and the data of a `bid` event: the bid and the auction after it.
public struct BidResult: Codable, Hashable, Sendable {
    public var bid: Bid
    public var auction: Auction
}

/// The currencies Herald knows.
public enum Currency: String, Codable, Hashable, Sendable, CaseIterable {
    case dollar, euro, turkishLira, gramGold
}

/// The default currency and the ones it may be set to.
public struct CurrencySetting: Codable, Hashable, Sendable {
    public var `default`: Currency
    public var available: [Currency]
    /// Digits after the decimal point of each currency's amounts, by name.
    public var minorDigits: [String: Int]
}

/// A train trip; its delay and `delayed` follow from its times.
public struct Trip: Codable, Hashable, Sendable {
    /// Localized strings (times in UTC), in the stream's or request's locale.
    public struct Display: Codable, Hashable, Sendable {
        public var locale: String
        public var date: String
        public var departure: String
        public var actualDeparture: String
        public var arrival: String
        public var duration: String
        public var delay: String?
    }
    public var id: String
    public var departure: String
    public var arrival: String
    public var actualDeparture: String
    public var durationSeconds: Int
    /// Negative when departing early.
    public var delaySeconds: Int
    public var delayed: Bool
    public var display: Display
}

/// An object of the units store.
public struct HeraldUnit: Codable, Hashable, Sendable {
    public enum Status: String, Codable, Hashable, Sendable { case healthy, wounded, dead }
    public var id: String
    public var name: String
    public var status: Status
    /// An emoji for the status.
    public var face: String

    public init(id: String, name: String, status: Status, face: String) {
        self.id = id
        self.name = name
        self.status = status
        self.face = face
    }
}

/// A posted notification: its name, an optional object and a payload.
public struct HeraldNotification: Codable, Hashable, Sendable {
    public var name: String
    public var object: String?
    public var userInfo: JSON
    public var postedAt: String
}

/// Who watches a topic (`presence/T`): the number of streams, and the users by their token's `sub`
/// (`truncated` instead, past the server's limit of users).
public struct Presence: Codable, Hashable, Sendable {
    public struct User: Codable, Hashable, Sendable {
        public var sub: String
        /// 0 while the user is in the grace after their last stream closed.
        public var streams: Int
        public var since: String
    }
    /// The presence topic, `presence/T`.
    public var topic: String
    public var watchers: Int
    public var users: [User]?
    public var truncated: Bool?
}

/// A stream's lease, the data of `stream`, `token-expiring` and `expired`: renew it through
/// `POST /streams/{stream}/token` before `expiresAt` (the client does, when it has a token provider).
public struct StreamLease: Codable, Hashable, Sendable {
    public var stream: String
    public var expiresAt: String
}

/// An auction's countdown tick (not numbered, never replayed).
public struct Tick: Codable, Hashable, Sendable {
    public var auctionId: String
    public var remainingSeconds: Int
    public var price: Int
    public var currency: Currency
    public var leader: String?
    public var deadline: String?
}

/// An `application/problem+json` answer (RFC 9457): every refusal Herald gives.
public struct HeraldProblem: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    /// One invalid field of a 422.
    public struct FieldError: Codable, Hashable, Sendable {
        public var field: String
        public var message: String
    }
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String
    /// The id Herald's log names the request by.
    public var requestId: String?
    public var errors: [FieldError]?
    /// From a 429's or 503's `Retry-After`.
    public var retryAfter: Int?

    public init(type: String = "about:blank", title: String, status: Int, detail: String, requestId: String? = nil) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.requestId = requestId
    }

    public var description: String { "\(status) \(title): \(detail)" }
}

/// Any JSON value: a notification's payload, or an event this version of the client does not know.
public enum JSON: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
}
