/// One invalid field of a request.
public struct FieldError: Sendable, Equatable {
    public let field: String
    public let message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// Why the domain refused a command. The server maps `kind` to an HTTP status.
public struct DomainError: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// No such auction, trip or unit.
        case notFound
        /// The command is well-formed but conflicts with the current state (a closed auction, a low bid).
        case conflict
        /// One or more values are invalid.
        case invalid
        /// The change could not be stored; nothing changed. Try again later.
        case unavailable
        /// The change could not be stored and trying again will not help (a damaged store); nothing changed.
        case failed
        /// The command was conditional on the subject's version (`If-Match`, `If-None-Match`) and the
        /// subject is not at that version; nothing changed.
        case preconditionFailed
    }

    public let kind: Kind
    public let message: String
    public var fields: [FieldError] = []
    /// What a refused bid needs to know to try again.
    public var auction: AuctionConflict?
    /// What went wrong underneath (the store's error), for the log only: never sent to a client.
    public var cause: String?
    /// The subject's current version tag, when a conditional command was refused (nil: it does not exist).
    public var currentTag: String?

    public init(_ kind: Kind, _ message: String, fields: [FieldError] = [], auction: AuctionConflict? = nil, cause: String? = nil) {
        self.kind = kind
        self.message = message
        self.fields = fields
        self.auction = auction
        self.cause = cause
    }

    public static func == (lhs: DomainError, rhs: DomainError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.fields == rhs.fields
    }

    public static func notFound(_ what: String, _ id: some CustomStringConvertible) -> DomainError {
        DomainError(.notFound, "no \(what) with id '\(id)'")
    }
}

/// The state of an auction that refused a bid: its price, and either the lowest bid it takes or (when
/// closed) its winner.
public struct AuctionConflict: Sendable, Equatable {
    public let price: Int64
    public let minimumBid: Int64?
    public let closed: Bool
    public let winner: String?

    public init(price: Int64, minimumBid: Int64?, closed: Bool, winner: String?) {
        self.price = price
        self.minimumBid = minimumBid
        self.closed = closed
        self.winner = winner
    }
}
