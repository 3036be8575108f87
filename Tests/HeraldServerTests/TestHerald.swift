import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldServer
import HeraldStore
import HeraldTestSupport
import HeraldThreads
import Logging
import Synchronization
import Testing

/// A real Herald on 127.0.0.1, port 0, in this process.
final class TestHerald {
    let herald: Herald
    let clock: ManualClock?
    /// A token that may watch everything, for the reads that need one (set by the test).
    var adminToken: String?
    private let temporaryData: String?

    init(clock: ManualClock? = nil, history: Int = 10_000, queueLimit: Int = 4096, heartbeat: Duration? = nil,
         bodyLimit: Int = 64 * 1024, examples: Bool = false, dataDirectory: String? = nil, temporaryStore: Bool = false,
         historyDays: Int? = 7,
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
        // A store of its own that `stop()` removes, for a test that does not restart on it.
        temporaryData = temporaryStore ? temporaryDirectory("herald-data") : nil
        configuration.dataDirectory = dataDirectory ?? temporaryData
        configuration.historyDays = historyDays
        configuration.synchronous = synchronous
        configure(&configuration)
        self.clock = clock
        // Warnings and worse only: an access line per request would bury the test output.
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        herald = try Herald(configuration: configuration, logger: logger ?? quiet, clock: clock ?? SystemClock())
        // A firing is queued on the writer: a test's `advance` returns once it ran, as a change's answer does.
        clock?.afterEachFiring { [weak herald] in herald?.settle() }
        try herald.start()
    }

    private var stopped = false

    /// Stops the server. A test calls it in `defer` right after making the server: Swift may end an
    /// object's life after its last use, so a server stopped in `deinit` could stop before a stream
    /// it serves is read.
    func stop() {
        guard !stopped else { return }
        stopped = true
        herald.stop()
        if let temporaryData { removeTemporaryDirectory(temporaryData) }
    }

    deinit {
        if !stopped {
            Issue.record("a TestHerald was not stopped: call stop() in a defer after making it")
            herald.stop()
        }
    }

    var port: Int { herald.port }

    func client() -> HTTPClient { HTTPClient(port: port) }

    /// Sends `text` on a connection of its own, byte for byte, and reads until the server closes it
    /// (or 3 s pass). Returns what came back.
    func exchange(_ text: String) throws -> String {
        let socket = try Socket(port: port, timeout: 3)
        try socket.send(text)
        var out: [UInt8] = []
        while true {
            guard let chunk = try? socket.receive(), !chunk.isEmpty else { break }
            out += chunk
        }
        return String(decoding: out, as: UTF8.self)
    }

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
        let subjects = try client().get("/subjects", headers: adminToken.map(Tokens.bearer) ?? []).json["subjects"] as? [[String: Any]] ?? []
        return subjects.first { $0["topic"] as? String == topic }?["observers"] as? Int ?? 0
    }
}

/// What a child herald wrote to standard error, kept as it arrives (the pipe never fills).
final class LogLines: Sendable {
    private let state = Lock<[UInt8]>([])

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
