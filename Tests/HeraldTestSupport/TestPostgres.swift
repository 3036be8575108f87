import CPostgres
import Foundation

/// The throwaway PostgreSQL that `scripts/test` starts (`scripts/test-postgres`), named by
/// `HERALD_TEST_POSTGRES`: the URL of its `postgres` database. Each test makes a database of its own.
public enum TestPostgres {
    public static let adminURL: String? = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A new, empty database; returns its URL.
    public static func database() throws -> String {
        guard let adminURL, let slash = adminURL.lastIndex(of: "/") else {
            throw Failure(description: "HERALD_TEST_POSTGRES is not set: scripts/test starts a PostgreSQL for these tests")
        }
        let name = "herald_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try run("CREATE DATABASE \(name)")
        return String(adminURL[..<slash]) + "/" + name
    }

    /// Holds an advisory lock in a transaction of its own on the database `url` names, until
    /// `release()`: a test's way to stop every replica at the start of its next batch.
    public final class HeldLock: @unchecked Sendable {
        private let connection: OpaquePointer

        public init(_ key: Int64, on url: String) throws {
            let connection = try connect(url)
            do {
                try execute("BEGIN", on: connection)
                try execute("SELECT pg_advisory_xact_lock(\(key))", on: connection)
            } catch {
                PQfinish(connection)
                throw error
            }
            self.connection = connection
        }

        /// Ends the transaction, and with it the lock.
        public func release() { PQclear(PQexec(connection, "COMMIT")) }

        deinit { PQfinish(connection) }
    }

    /// A connection of the test's own to the database `url` names, kept open until it is dropped:
    /// it goes on working while the database takes no new connections.
    public final class Session: @unchecked Sendable {
        private let connection: OpaquePointer

        public init(on url: String) throws { connection = try connect(url) }

        /// Runs SQL; returns the first column of the first row.
        @discardableResult
        public func run(_ sql: String) throws -> String? { try execute(sql, on: connection) }

        /// The notifications this session (after `LISTEN`) got within `seconds`: every one that came
        /// before the wait ended.
        public func notifications(waiting seconds: Double) -> [(channel: String, payload: String)] {
            var got: [(channel: String, payload: String)] = []
            let deadline = Date().addingTimeInterval(seconds)
            while true {
                PQconsumeInput(connection)
                while let notify = PQnotifies(connection) {
                    got.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
                    PQfreemem(notify)
                }
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { return got }
                var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, Int32(left * 1_000))
            }
        }

        deinit { PQfinish(connection) }
    }

    /// Runs SQL on the `postgres` database, or on the database `url` names; returns the first column
    /// of the first row.
    @discardableResult
    public static func run(_ sql: String, on url: String? = nil) throws -> String? {
        guard let target = url ?? adminURL else { throw Failure(description: "HERALD_TEST_POSTGRES is not set") }
        let connection = try connect(target)
        defer { PQfinish(connection) }
        return try execute(sql, on: connection)
    }

    /// A connection to `url`; the caller finishes it.
    private static func connect(_ url: String) throws -> OpaquePointer {
        guard let connection = PQconnectdb(url) else { throw Failure(description: "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            defer { PQfinish(connection) }
            throw Failure(description: "cannot connect to \(url): \(String(cString: PQerrorMessage(connection)))")
        }
        return connection
    }

    /// Runs SQL on `connection`; returns the first column of the first row.
    @discardableResult
    private static func execute(_ sql: String, on connection: OpaquePointer) throws -> String? {
        guard let result = PQexec(connection, sql) else { throw Failure(description: String(cString: PQerrorMessage(connection))) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw Failure(description: "\(sql): \(String(cString: PQresultErrorMessage(result)))")
        }
        guard PQntuples(result) > 0, PQnfields(result) > 0, PQgetisnull(result, 0, 0) == 0 else { return nil }
        return String(cString: PQgetvalue(result, 0, 0))
    }
}
