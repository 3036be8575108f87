import CPostgres
import Foundation

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

    private var stopped = false

    /// Stops the server and removes its directory. A test calls it in `defer`: an object may end its
    /// life after its last use, which for a crash test comes before the servers that use it stop.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        try? Self.run("stop", directory)
    }

    deinit { stop() }

    /// Kills the server and its processes (kill -9): it recovers from its log when it starts again.
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
