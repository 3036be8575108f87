import CSQLite
import HeraldJSON
import Foundation

/// Why the store cannot do what it was asked: said plainly, for the log and the exit message.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What failed, as far as a caller can act on it (from SQLite's primary result code, or
    /// PostgreSQL's SQLSTATE).
    public enum Kind: Sendable, Equatable {
        /// Another writer holds the database (SQLITE_BUSY, SQLITE_LOCKED; a serialization failure or
        /// deadlock in PostgreSQL): trying again may work.
        case busy
        /// The disk or the database's size limit is full (SQLITE_FULL, PostgreSQL's class 53).
        case full
        /// The database cannot be written (SQLITE_READONLY, a read-only PostgreSQL transaction).
        case readOnly
        /// The database server cannot be reached, or the connection to it broke (PostgreSQL).
        case unreachable
        /// The file is damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB).
        case corrupt
        /// Anything else, or a failure the database did not report.
        case other
    }

    public let description: String
    /// SQLite's extended result code, when SQLite reported the failure.
    public let code: Int32?
    private let reported: Kind?

    public init(_ description: String, code: Int32? = nil) {
        self.description = code.map { "\(description) (SQLite code \($0))" } ?? description
        self.code = code
        reported = nil
    }

    /// A failure whose kind is known without a SQLite code (PostgreSQL's, or a lost connection).
    public init(_ description: String, kind: Kind) {
        self.description = description
        code = nil
        reported = kind
    }

    public var kind: Kind {
        if let reported { return reported }
        return switch code.map({ $0 & 0xFF }) {
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_FULL: .full
        case SQLITE_READONLY: .readOnly
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        default: .other
        }
    }
}

/// An event as stored: the same bytes the observers get.
public struct StoredEvent: Sendable, Equatable {
    public let id: UInt64
    public let topic: String
    public let name: String
    public let data: [UInt8]
    public let tags: [String]
    public let at: Date

    public init(id: UInt64, topic: String, name: String, data: [UInt8], tags: [String], at: Date) {
        self.id = id
        self.topic = topic
        self.name = name
        self.data = data
        self.tags = tags
        self.at = at
    }
}

/// A domain record to write (`document`) or delete (`document == nil`).
public struct RecordChange: Sendable, Equatable {
    public let kind: String
    public let id: String
    public let document: [UInt8]?

    public init(kind: String, id: String, document: [UInt8]?) {
        self.kind = kind
        self.id = id
        self.document = document
    }
}

/// An auction's own fields as stored (times in RFC 3339, money in minor units). Its bids are rows of
/// their own: a bid is appended, never rewritten with the auction.
public struct StoredAuction: Sendable, Equatable {
    public let id: String
    public let item: String
    public let startingPrice: Int64
    public let createdAt: String
    public let status: String
    public let countdownSeconds: Int
    public let deadline: String?
    public let winner: String?
    public let closedAt: String?
    /// Filled when loading; not written with the auction.
    public var bids: [StoredBid]

    public init(id: String, item: String, startingPrice: Int64, createdAt: String, status: String, countdownSeconds: Int,
                deadline: String?, winner: String?, closedAt: String?, bids: [StoredBid] = []) {
        self.id = id
        self.item = item
        self.startingPrice = startingPrice
        self.createdAt = createdAt
        self.status = status
        self.countdownSeconds = countdownSeconds
        self.deadline = deadline
        self.winner = winner
        self.closedAt = closedAt
        self.bids = bids
    }
}

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

/// What a store holds at start.
public struct StoredState: Sendable {
    /// The last sequence number ever given out (never reused, even when its event is pruned).
    public var lastSequence: UInt64 = 0
    /// The newest events, oldest first.
    public var events: [StoredEvent] = []
    /// Records by kind, each by id.
    public var records: [String: [(id: String, document: [UInt8])]] = [:]
    /// Every auction with its bids, by id order.
    public var auctions: [StoredAuction] = []

    public init() {}
}

/// How hard a commit insists on the disk.
public enum Synchronous: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: a commit survives the process crashing; a power cut may lose the
    /// last commits (never corrupts).
    case normal
    /// Every commit is on the disk before it is acknowledged: the write-ahead log is synced once for
    /// each batch of commits (group commit), as `synchronous=FULL` would sync it for each.
    case full
}

/// The answer to a change made with an `Idempotency-Key`, kept so that a retry gets it again instead
/// of making the change twice.
public struct KeptAnswer: Sendable, Equatable {
    /// The client's key, scoped to who sent it (a token's subject, when there is a key).
    public let key: String
    /// What the request was (method, path and a digest of its body): the same key with another
    /// request is refused.
    public let fingerprint: String
    public let status: Int
    /// The headers worth giving again (`Location`, `Content-Type`), as name and value.
    public let headers: [[String]]
    public let body: [UInt8]
    public let at: Date

    /// How long an answer is kept: a day, as clients retry within minutes.
    public static let keptSeconds: Double = 86_400

    /// Headers as stored: a JSON array of [name, value] pairs.
    static func encode(_ headers: [[String]]) -> String {
        JSONValue.array(headers.map { .array($0.map { .string($0) }) }).serialized
    }

    static func decode(_ text: String) -> [[String]] {
        guard case .array(let pairs)? = try? JSONValue.parse(Array(text.utf8)) else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let items) = pair else { return nil }
            let strings = items.compactMap(\.stringValue)
            return strings.count == 2 ? strings : nil
        }
    }

    public init(key: String, fingerprint: String, status: Int, headers: [[String]], body: [UInt8], at: Date) {
        self.key = key
        self.fingerprint = fingerprint
        self.status = status
        self.headers = headers
        self.body = body
        self.at = at
    }
}
