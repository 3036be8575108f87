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

    /// Runs SQL on the `postgres` database, or on the database `url` names; returns the first column
    /// of the first row.
    @discardableResult
    public static func run(_ sql: String, on url: String? = nil) throws -> String? {
        guard let target = url ?? adminURL else { throw Failure(description: "HERALD_TEST_POSTGRES is not set") }
        guard let connection = PQconnectdb(target) else { throw Failure(description: "libpq could not allocate a connection") }
        defer { PQfinish(connection) }
        guard PQstatus(connection) == CONNECTION_OK else {
            throw Failure(description: "cannot connect to \(target): \(String(cString: PQerrorMessage(connection)))")
        }
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
