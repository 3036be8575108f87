import ArgumentParser
import Foundation
import HeraldServer
import HeraldStore
import Logging

/// `herald`: runs the server until SIGTERM or SIGINT. Every option can also come from `HERALD_<NAME>`.
@main
struct HeraldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A real-time state server: change state over JSON HTTP, watch it change over Server-Sent Events.",
        discussion: "Each option may also be set by an environment variable: HERALD_HOST, HERALD_PORT, HERALD_HEARTBEAT_SECONDS, HERALD_HISTORY_EVENTS, HERALD_HISTORY_DAYS, HERALD_DATA_DIR, HERALD_IN_MEMORY=1, HERALD_SYNC, HERALD_OBSERVER_QUEUE, HERALD_CONNECTION_MEMORY, HERALD_CORS_ORIGIN, HERALD_ALLOWED_HOSTS, HERALD_LOG_LEVEL, HERALD_NO_EXAMPLES=1. A value out of range, or an environment variable that is not a number where one is needed, stops the start with exit code 64.")

    @Option(help: "Address to listen on (env HERALD_HOST).")
    var host: String = Environment.string("HERALD_HOST") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (env HERALD_PORT).")
    var port: Int = Environment.int("HERALD_PORT") ?? 8080

    @Option(help: "Seconds between heartbeat comments on idle streams; 0 turns them off (env HERALD_HEARTBEAT_SECONDS).")
    var heartbeatSeconds: Int = Environment.int("HERALD_HEARTBEAT_SECONDS") ?? 15

    @Option(name: [.customLong("history-events"), .customLong("history")],
            help: "Past events kept for Last-Event-ID replay (env HERALD_HISTORY_EVENTS).")
    var history: Int = Environment.int("HERALD_HISTORY_EVENTS") ?? Environment.int("HERALD_HISTORY") ?? 10_000

    @Option(help: "Days an event is kept for replay; 0 keeps them whatever their age (env HERALD_HISTORY_DAYS).")
    var historyDays: Int = Environment.int("HERALD_HISTORY_DAYS") ?? 7

    @Option(help: "Directory of the embedded SQLite store (env HERALD_DATA_DIR).")
    var dataDir: String = Environment.string("HERALD_DATA_DIR") ?? "./herald-data"

    @Flag(help: "Store nothing: an ephemeral server that forgets everything when it stops (env HERALD_IN_MEMORY=1).")
    var inMemory: Bool = Environment.flag("HERALD_IN_MEMORY")

    @Option(help: "normal: a commit survives a crash of Herald; full: also a power cut, at a cost per write (env HERALD_SYNC).")
    var sync: String = Environment.string("HERALD_SYNC") ?? "normal"

    @Option(help: "Live events that may wait for one slow observer before its stream is closed (env HERALD_OBSERVER_QUEUE).")
    var observerQueue: Int = Environment.int("HERALD_OBSERVER_QUEUE") ?? 4096

    @Option(help: "Bytes of libmicrohttpd memory per connection: headers and buffers (env HERALD_CONNECTION_MEMORY).")
    var connectionMemory: Int = Environment.int("HERALD_CONNECTION_MEMORY") ?? 16_384

    @Option(help: "Origins browsers may call from: * or a comma-separated list such as https://a.example,http://localhost:3000; a listed origin may send credentials (env HERALD_CORS_ORIGIN).")
    var corsOrigin: String = Environment.string("HERALD_CORS_ORIGIN") ?? "*"

    @Option(help: "Host names requests may carry in Host, comma-separated (name or name:port), or *; others get 421. Default: 127.0.0.1, localhost and [::1] when listening on loopback, else any (env HERALD_ALLOWED_HOSTS).")
    var allowedHosts: String? = Environment.string("HERALD_ALLOWED_HOSTS")

    @Option(help: "trace, debug, info, notice, warning, error or critical (env HERALD_LOG_LEVEL).")
    var logLevel: String = Environment.string("HERALD_LOG_LEVEL") ?? "info"

    @Flag(help: "Start empty, without the example auction, trip and unit (env HERALD_NO_EXAMPLES=1).")
    var noExamples: Bool = Environment.flag("HERALD_NO_EXAMPLES")

    /// Every range is one the server can run with: a heartbeat in milliseconds fits an Int32, a queue
    /// or a pool fits in memory.
    func validate() throws {
        if let bad = Environment.numbers.first(where: { Environment.string($0) != nil && Environment.int($0) == nil }) {
            throw ValidationError("\(bad) must be a whole number, not '\(Environment.string(bad) ?? "")'")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (0...86_400).contains(heartbeatSeconds) else { throw ValidationError("--heartbeat-seconds must be 0 to 86400") }
        guard (4096...1_048_576).contains(connectionMemory) else { throw ValidationError("--connection-memory must be 4096 to 1048576") }
        guard (1...1_000_000).contains(observerQueue) else { throw ValidationError("--observer-queue must be 1 to 1000000") }
        guard (1...10_000_000).contains(history) else { throw ValidationError("--history-events must be 1 to 10000000") }
        guard (0...36_500).contains(historyDays) else { throw ValidationError("--history-days must be 0 to 36500") }
        guard Self.isOriginList(corsOrigin) else {
            throw ValidationError("--cors-origin must be * or a comma-separated list of origins such as https://a.example")
        }
        if let allowedHosts, allowedHosts != "*", Self.hostList(allowedHosts) == nil {
            throw ValidationError("--allowed-hosts must be * or a comma-separated list of host names (name or name:port)")
        }
        guard Synchronous(rawValue: sync) != nil else { throw ValidationError("--sync must be normal or full") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical") }
    }

    func run() throws {
        // First, before any thread exists: a SIGTERM sent as soon as the server answers is never lost.
        let termination = Termination()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "herald")
        let openFiles = raiseOpenFileLimit()

        var configuration = HeraldConfiguration()
        configuration.http.host = host
        configuration.http.port = port
        configuration.http.connectionMemoryLimit = connectionMemory
        configuration.http.heartbeat = heartbeatSeconds > 0 ? .seconds(heartbeatSeconds) : nil
        configuration.history = history
        configuration.historyDays = historyDays > 0 ? historyDays : nil
        configuration.dataDirectory = inMemory ? nil : dataDir
        configuration.synchronous = Synchronous(rawValue: sync) ?? .normal
        configuration.observerQueueLimit = observerQueue
        configuration.corsOrigin = corsOrigin
        configuration.http.allowedHosts = allowedHosts == "*" ? nil : allowedHosts.flatMap(Self.hostList) ?? Self.loopbackHosts(host)
        configuration.examples = !noExamples

        let herald: Herald
        do {
            herald = try Herald(configuration: configuration, logger: logger)
            try herald.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        logger.info("ready", metadata: ["open.files": "\(openFiles)"])
        termination.wait()
        logger.info("stopping")
        herald.stop()
    }

    /// `*`, or origins: a scheme, `://`, and a host with an optional port, printable and without spaces.
    static func isOriginList(_ text: String) -> Bool {
        if text == "*" { return true }
        let origins = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return !origins.isEmpty && origins.allSatisfy { origin in
            (origin.hasPrefix("http://") || origin.hasPrefix("https://")) && origin.count <= 200
                && origin.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "," }
        }
    }

    /// Host names or `name:port`, as `RequestGuard` compares them; nil when one is not a host.
    static func hostList(_ text: String) -> [String]? {
        let hosts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !hosts.isEmpty, hosts.allSatisfy({ !$0.isEmpty && $0.count <= 255 && $0.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-._:[]".unicodeScalars.contains($0)
        } }) else { return nil }
        return hosts
    }

    /// On loopback, only names that lead here: a page on another site whose name an attacker points at
    /// 127.0.0.1 (DNS rebinding) is refused. Elsewhere, any host.
    static func loopbackHosts(_ listen: String) -> [String]? {
        let loopback = listen == "localhost" || listen.hasPrefix("127.") || listen == "::1" || listen == "[::1]"
        guard loopback else { return nil }
        return Array(Set(["127.0.0.1", "localhost", "[::1]", listen.lowercased()]))
    }

    /// Raises the soft open-file limit to the hard one: every connection is a file.
    private func raiseOpenFileLimit() -> UInt {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return UInt(limit.rlim_cur)
    }
}

/// SIGTERM and SIGINT, held from the moment this is made until `wait()` takes one. They are blocked
/// in the calling thread before any other thread exists, so every thread made later (libmicrohttpd's,
/// the stream watcher, Dispatch's) inherits the block and no signal can end or escape the process
/// between the port opening and the wait: `sigwait` takes it from the pending set.
final class Termination {
    private var signals = sigset_t()

    init() {
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Blocks until SIGTERM or SIGINT.
    func wait() {
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
    }
}

/// Option defaults from the environment.
enum Environment {
    static func string(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func int(_ name: String) -> Int? { string(name).flatMap { Int($0) } }

    /// The variables that must be numbers when set.
    static let numbers = ["HERALD_PORT", "HERALD_HEARTBEAT_SECONDS", "HERALD_HISTORY_EVENTS", "HERALD_HISTORY",
                          "HERALD_HISTORY_DAYS", "HERALD_OBSERVER_QUEUE", "HERALD_CONNECTION_MEMORY"]

    static func flag(_ name: String) -> Bool {
        guard let value = string(name)?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }
}
