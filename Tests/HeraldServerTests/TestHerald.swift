import Foundation
import HeraldDomain
import HeraldServer
import HeraldTestSupport
import Logging

/// A real Herald on 127.0.0.1, port 0, in this process.
final class TestHerald {
    let herald: Herald
    let clock: ManualClock?

    init(clock: ManualClock? = nil, history: Int = 10_000, queueLimit: Int = 4096, heartbeat: Duration? = nil,
         bodyLimit: Int = 64 * 1024, examples: Bool = false, dataDirectory: String? = nil, historyDays: Int? = 7,
         allowedHosts: [String]? = nil, corsOrigin: String = "*") throws {
        var configuration = HeraldConfiguration()
        configuration.http.host = "127.0.0.1"
        configuration.http.port = 0
        configuration.http.heartbeat = heartbeat
        configuration.http.bodyLimit = bodyLimit
        configuration.http.allowedHosts = allowedHosts
        configuration.corsOrigin = corsOrigin
        configuration.history = history
        configuration.observerQueueLimit = queueLimit
        configuration.examples = examples
        configuration.dataDirectory = dataDirectory
        configuration.historyDays = historyDays
        self.clock = clock
        herald = try Herald(configuration: configuration, logger: Logger(label: "test"), clock: clock ?? SystemClock())
        try herald.start()
    }

    deinit { herald.stop() }

    var port: Int { herald.port }

    func client() -> HTTPClient { HTTPClient(port: port) }

    /// Opens an SSE stream and waits for its response head.
    func stream(_ path: String, headers: [(String, String)] = []) throws -> SSEClient {
        let client = try SSEClient(port: port, path: path, headers: headers)
        try client.awaitHead()
        return client
    }

    /// Creates an auction and returns its id.
    func auction(countdown: Int = 7, startingPrice: Int = 0) throws -> String {
        let response = try client().post("/auctions", #"{"item":"lamp","countdownSeconds":\#(countdown),"startingPrice":\#(startingPrice)}"#)
        guard response.status == 201, let id = response.json["id"] as? String else { throw TestError("create failed: \(response.text)") }
        return id
    }

    /// Observers the server reports for `topic` in `/subjects`.
    func observers(of topic: String) throws -> Int {
        let subjects = try client().get("/subjects").json["subjects"] as? [[String: Any]] ?? []
        return subjects.first { $0["topic"] as? String == topic }?["observers"] as? Int ?? 0
    }
}

/// The built `herald` executable, next to the test bundle; `HERALD_BINARY` names another build (the
/// test command runs the process tests again on the AddressSanitizer build).
func heraldExecutable() -> URL {
    if let binary = ProcessInfo.processInfo.environment["HERALD_BINARY"], !binary.isEmpty {
        return URL(fileURLWithPath: binary)
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")
}

/// `herald` as a child process on a free port, for tests that look at the process from outside.
final class HeraldProcess {
    let process = Process()
    let port: Int

    /// Starts `herald` in memory, or on `dataDirectory` when given.
    init(arguments: [String] = [], dataDirectory: String? = nil) throws {
        port = try Self.freePort()
        process.executableURL = heraldExecutable()
        let store = dataDirectory.map { ["--data-dir", $0] } ?? ["--in-memory"]
        process.arguments = ["--port", String(port), "--log-level", "warning"] + store + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let port = port
        guard eventually(timeout: 10, { (try? HTTPClient(port: port).get("/health").status) == 200 }) else {
            process.terminate()
            throw TestError("herald did not start")
        }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// A field of /proc/PID/status, such as `Threads` or `VmRSS` (kB).
    func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
