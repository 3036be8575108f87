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

/// A PostgreSQL of a test's own (`scripts/test-postgres`), for a test that crashes it: the shared one
/// serves the other tests meanwhile.
public final class PrivatePostgres {
    public let url: String
    private let directory: String

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/test-postgres").path

    public init() throws {
        directory = "/tmp/herald-test-postgres-\(UUID().uuidString.prefix(8))"
        try Self.run("start", directory)
        let port = try String(contentsOfFile: directory + "/port", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        url = "postgres://postgres@127.0.0.1:\(port)/postgres"
    }

    deinit { try? Self.run("stop", directory) }

    /// Stops the server at once, as a crash would.
    public func crash() throws { try Self.run("crash", directory) }

    /// Starts it again on the same port.
    public func restart() throws { try Self.run("restart", directory) }

    /// Runs the script with posix_spawn and waitpid: Foundation's `Process.waitUntilExit` was seen to
    /// wait forever here, on a test's thread, after the script had ended.
    private static func run(_ command: String, _ directory: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let arguments = ["/bin/bash", script, command, directory]
        var pid: pid_t = 0
        let copies = arguments.map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, copies, environ)
        guard spawned == 0 else { throw TestPostgres.Failure(description: "cannot run scripts/test-postgres: \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return }  // reaped elsewhere: the caller's next step says whether it worked
        }
        let exited = (status & 0x7F) == 0
        guard exited, (status >> 8) & 0xFF == 0 else {
            throw TestPostgres.Failure(description: "scripts/test-postgres \(command) failed (status \(status))")
        }
    }
}
