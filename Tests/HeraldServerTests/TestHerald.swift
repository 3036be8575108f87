import Foundation
import HeraldDomain
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Logging
import Synchronization

/// A real Herald on 127.0.0.1, port 0, in this process.
final class TestHerald {
    let herald: Herald
    let clock: ManualClock?

    init(clock: ManualClock? = nil, history: Int = 10_000, queueLimit: Int = 4096, heartbeat: Duration? = nil,
         bodyLimit: Int = 64 * 1024, examples: Bool = false, dataDirectory: String? = nil, historyDays: Int? = 7,
         allowedHosts: [String]? = nil, corsOrigin: String = "*", connectionLimit: Int? = nil,
         synchronous: Synchronous = .normal, logger: Logger? = nil, configure: (inout HeraldConfiguration) -> Void = { _ in }) throws {
        var configuration = HeraldConfiguration()
        configuration.http.host = "127.0.0.1"
        configuration.http.port = 0
        configuration.http.heartbeat = heartbeat
        configuration.http.bodyLimit = bodyLimit
        configuration.http.allowedHosts = allowedHosts
        configuration.http.connectionLimit = connectionLimit
        configuration.corsOrigin = corsOrigin
        configuration.history = history
        configuration.observerQueueLimit = queueLimit
        configuration.examples = examples
        configuration.dataDirectory = dataDirectory
        configuration.historyDays = historyDays
        configuration.synchronous = synchronous
        configure(&configuration)
        self.clock = clock
        // Warnings and worse only: an access line per request would bury the test output.
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        herald = try Herald(configuration: configuration, logger: logger ?? quiet, clock: clock ?? SystemClock())
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

/// `herald` as a child process. It binds port 0 itself and the port is read from its log: choosing a
/// free port here and passing it on would race with every other server the parallel tests start
/// (a check of /health could then reach one of theirs).
final class HeraldProcess {
    /// For load tests from one address: no limit on streams per address, new connections or writes.
    static let unlimited = ["--streams-per-address", "0", "--connections-per-second", "0", "--writes-per-second", "0"]

    let process = Process()
    let port: Int
    private let errors = Pipe()
    /// What it wrote to standard error so far.
    let log = LogLines()

    /// Starts `herald` in memory, or on `dataDirectory` when given, or on the database `arguments`
    /// name with `--store`.
    init(arguments: [String] = [], dataDirectory: String? = nil) throws {
        process.executableURL = heraldExecutable()
        let store = arguments.contains("--store") ? [] : dataDirectory.map { ["--data-dir", $0] } ?? ["--in-memory"]
        // No pause between SIGTERM and the streams' end unless a test asks for one.
        let drain = arguments.contains("--drain-seconds") ? [] : ["--drain-seconds", "0"]
        process.arguments = ["--port", "0", "--log-level", "info"] + store + drain + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        let log = self.log
        errors.fileHandleForReading.readabilityHandler = { handle in log.append(handle.availableData) }
        try process.run()
        let child = process
        guard eventually(timeout: 10, { log.listeningPort != nil || !child.isRunning }), let port = log.listeningPort else {
            process.terminate()
            throw TestError("herald did not start: \(log.text.suffix(2000))")
        }
        self.port = port
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        errors.fileHandleForReading.readabilityHandler = nil
    }

    /// A field of /proc/PID/status, such as `Threads` or `VmRSS` (kB).
    func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }
}

/// What a child herald wrote to standard error, kept as it arrives (the pipe never fills).
final class LogLines: Sendable {
    private let state = Mutex<[UInt8]>([])

    func append(_ data: Data) { state.withLock { $0.append(contentsOf: data) } }

    var text: String { state.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The port from the `herald listening` line (`http.port=N`), once it is written.
    var listeningPort: Int? {
        // Text (`http.port=N`) or JSON (`"http.port":"N"`) lines.
        guard let line = text.split(separator: "\n").first(where: { $0.contains("herald listening") }),
              let range = line.range(of: "http.port=") ?? line.range(of: #""http.port":""#) else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }
}
