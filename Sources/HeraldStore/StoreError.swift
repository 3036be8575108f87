import CSQLite

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
