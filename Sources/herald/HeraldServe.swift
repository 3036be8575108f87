import ArgumentParser
import CoreMetrics
import Foundation
import HeraldAuth
import HeraldHTTP
import HeraldServer
import HeraldStore
import Logging
import Prometheus

/// `herald [serve]`: runs the server until SIGTERM or SIGINT. Every option can also come from `HERALD_<NAME>`.
struct HeraldServe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Runs the server until SIGTERM or SIGINT (the default command).",
        discussion: "Each option may also be set by an environment variable: \(Environment.described). A value out of range, or an environment variable that is not a number where one is needed, stops the start with exit code 64.")

    @Option(help: "Address to listen on (env HERALD_HOST).")
    var host: String = Environment.string("HERALD_HOST") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (env HERALD_PORT).")
    var port: Int = Environment.int("HERALD_PORT") ?? 8080

    @Option(help: "Seconds between heartbeat comments on idle streams; 0 turns them off (env HERALD_HEARTBEAT_SECONDS).")
    var heartbeatSeconds: Int = Environment.int("HERALD_HEARTBEAT_SECONDS") ?? 15

    @Option(name: [.customLong("history-events"), .customLong("history")],
            help: "Past events kept for Last-Event-ID replay (env HERALD_HISTORY_EVENTS).")
    var history: Int = Environment.int("HERALD_HISTORY_EVENTS") ?? Environment.int("HERALD_HISTORY") ?? 10_000

    @Option(help: "Bytes the in-memory replay history may hold, whichever of it and --history-events comes first (env HERALD_HISTORY_BYTES).")
    var historyBytes: Int = Environment.int("HERALD_HISTORY_BYTES") ?? 64 << 20

    @Option(help: "Days an event is kept for replay; 0 keeps them whatever their age (env HERALD_HISTORY_DAYS).")
    var historyDays: Int = Environment.int("HERALD_HISTORY_DAYS") ?? 7

    @Option(help: "Directory of the embedded SQLite store; default ./herald-data (env HERALD_DATA_DIR).")
    var dataDir: String?

    @Option(help: "Keep state in PostgreSQL instead of the data directory: a libpq URL such as postgres://herald@db:5432/herald (env HERALD_STORE).")
    var store: String?

    @Flag(help: "Store nothing: an ephemeral server that forgets everything when it stops (env HERALD_IN_MEMORY=1).")
    var inMemory: Bool = Environment.flag("HERALD_IN_MEMORY")

    @Option(help: "normal: a commit survives a crash of Herald; full: also a power cut, at a cost per write (env HERALD_SYNC).")
    var sync: String = Environment.string("HERALD_SYNC") ?? "normal"

    @Option(help: "Live events that may wait for one slow observer before its stream is closed (env HERALD_OBSERVER_QUEUE).")
    var observerQueue: Int = Environment.int("HERALD_OBSERVER_QUEUE") ?? 4096

    @Option(help: "Bytes of live events (their data and frame) that may wait for one slow observer before its stream is closed: 65536 to 1099511627776 (env HERALD_OBSERVER_QUEUE_BYTES).")
    var observerQueueBytes: Int = Environment.int("HERALD_OBSERVER_QUEUE_BYTES") ?? 16 << 20

    @Option(help: "Bytes of libmicrohttpd memory per connection: headers and buffers (env HERALD_CONNECTION_MEMORY).")
    var connectionMemory: Int = Environment.int("HERALD_CONNECTION_MEMORY") ?? 16_384

    @Option(help: "Origins browsers may call from: * or a comma-separated list such as https://a.example,http://localhost:3000; a listed origin may send credentials (env HERALD_CORS_ORIGIN).")
    var corsOrigin: String = Environment.string("HERALD_CORS_ORIGIN") ?? "*"

    @Option(help: "Host names requests may carry in Host, comma-separated (name, name:port, or name:* for any port), or *; others get 421. Default when listening on loopback: 127.0.0.1, localhost and [::1], on any port (so a proxy on this machine may pass its own Host on), and nothing else (a name another site points at 127.0.0.1 is refused); elsewhere any host (env HERALD_ALLOWED_HOSTS).")
    var allowedHosts: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (env HERALD_LOG_LEVEL).")
    var logLevel: String = Environment.string("HERALD_LOG_LEVEL") ?? "info"

    @Flag(help: "Start empty, without the example auction, trip and unit (env HERALD_NO_EXAMPLES=1).")
    var noExamples: Bool = Environment.flag("HERALD_NO_EXAMPLES")

    @Option(help: "HS256 secret (at least 32 bytes) that tokens are signed with; with a key, changes and streams need a token. Prefer --jwt-key-file: a command line is visible to other users (env HERALD_JWT_KEY).")
    var jwtKey: String?

    @Option(help: "File holding the HS256 secret (a trailing newline is not part of it), or a JWK Set of keys told apart by kid; read again at SIGHUP (env HERALD_JWT_KEY_FILE).")
    var jwtKeyFile: String?

    @Option(help: "PEM public key (EC P-256 for ES256, or RSA for RS256) that tokens are checked with, or a JWK Set of keys told apart by kid; read again at SIGHUP (env HERALD_JWT_PUBLIC_KEY_FILE).")
    var jwtPublicKeyFile: String?

    @Option(help: "Seconds before a stream's token expires that it gets token-expiring, to renew it (env HERALD_TOKEN_WARNING_SECONDS).")
    var tokenWarningSeconds: Int = Environment.int("HERALD_TOKEN_WARNING_SECONDS") ?? 60

    @Option(help: "Seconds a user whose last stream on a topic closed stays present, so a reload is no left and joined (env HERALD_PRESENCE_GRACE_SECONDS).")
    var presenceGraceSeconds: Int = Environment.int("HERALD_PRESENCE_GRACE_SECONDS") ?? 5

    @Option(help: "Distinct users a topic's presence lists; past it, counts only (env HERALD_PRESENCE_USERS).")
    var presenceUsers: Int = Environment.int("HERALD_PRESENCE_USERS") ?? 1000

    @Flag(help: "With a key, streams need no token; changes still do (env HERALD_PUBLIC_STREAMS=1).")
    var publicStreams: Bool = Environment.flag("HERALD_PUBLIC_STREAMS")

    @Option(help: "SSE streams one client address may hold; more get 429; 0: no limit (env HERALD_STREAMS_PER_ADDRESS).")
    var streamsPerAddress: Int = Environment.int("HERALD_STREAMS_PER_ADDRESS") ?? 100

    @Option(help: "SSE streams held in all; more get 503. Default: the open-file limit less a reserve (env HERALD_MAX_STREAMS).")
    var maxStreams: Int?

    @Option(help: "Threads that write the SSE streams, each with its own epoll set and share of the streams (1 to 64). Default: the cores Herald may run on, its CPU affinity (env HERALD_STREAM_THREADS).")
    var streamThreads: Int = Environment.int("HERALD_STREAM_THREADS") ?? StreamEngine.defaultThreads

    @Option(help: "New connections one address may open a second (bursts of twice that); more are closed unanswered; trusted proxies are not limited; 0: no limit (env HERALD_CONNECTIONS_PER_SECOND).")
    var connectionsPerSecond: Int = Environment.int("HERALD_CONNECTIONS_PER_SECOND") ?? 200

    @Option(help: "Connections one address may hold at once, streams included; more are closed unanswered; trusted proxies are not limited; 0: no limit (env HERALD_CONNECTIONS_PER_ADDRESS).")
    var connectionsPerAddress: Int = Environment.int("HERALD_CONNECTIONS_PER_ADDRESS") ?? 256

    @Option(help: "Changes one token, or without a key one address, may make a second (bursts of twice that); more get 429 with Retry-After; 0: no limit (env HERALD_WRITES_PER_SECOND).")
    var writesPerSecond: Int = Environment.int("HERALD_WRITES_PER_SECOND") ?? 200

    @Option(help: "Seconds a client has to send a request's head; then its connection is closed (env HERALD_HEADER_TIMEOUT).")
    var headerTimeout: Int = Environment.int("HERALD_HEADER_TIMEOUT") ?? 10

    @Option(help: "Seconds a client has, once its head is in, to send the body it declared; then its connection is closed (env HERALD_REQUEST_TIMEOUT).")
    var requestTimeout: Int = Environment.int("HERALD_REQUEST_TIMEOUT") ?? 30

    @Option(help: "Largest request head (header names and values) in bytes; larger gets 431 (env HERALD_MAX_HEADER_BYTES).")
    var maxHeaderBytes: Int = Environment.int("HERALD_MAX_HEADER_BYTES") ?? 8192

    @Option(help: "Longest request target (path and query) in bytes; longer gets 414 (env HERALD_MAX_URL_BYTES).")
    var maxUrlBytes: Int = Environment.int("HERALD_MAX_URL_BYTES") ?? 8192

    @Option(help: "Proxy addresses or CIDR ranges, comma-separated, whose X-Forwarded-For names the client (env HERALD_TRUSTED_PROXY).")
    var trustedProxy: String?

    @Option(help: "text, or json: one JSON object per line for log collectors (env HERALD_LOG_FORMAT).")
    var logFormat: String = Environment.string("HERALD_LOG_FORMAT") ?? "text"

    @Flag(help: "No access line per request (streams still log their opening and closing) (env HERALD_NO_ACCESS_LOG=1).")
    var noAccessLog: Bool = Environment.flag("HERALD_NO_ACCESS_LOG")

    @Flag(help: "Count nothing and serve no /metrics (env HERALD_NO_METRICS=1).")
    var noMetrics: Bool = Environment.flag("HERALD_NO_METRICS")

    @Option(help: "Serve /metrics on this address only, not on the public listener; with --metrics-port (env HERALD_METRICS_HOST).")
    var metricsHost: String?

    @Option(help: "Serve /metrics on this port only, not on the public listener; 0 picks a free one (env HERALD_METRICS_PORT).")
    var metricsPort: Int?

    @Option(help: "Seconds between SIGTERM and the streams' end, while /health/ready answers 503 so a balancer stops sending; SIGINT (Ctrl-C) or a second signal stops at once (env HERALD_DRAIN_SECONDS).")
    var drainSeconds: Int = Environment.int("HERALD_DRAIN_SECONDS") ?? 2

    /// Every range is one the server can run with: a heartbeat in milliseconds fits an Int32, a queue
    /// or a pool fits in memory.
    /// Fills what the command line left out from the environment (an optional option with a default
    /// is deprecated in swift-argument-parser), then checks every value.
    mutating func validate() throws {
        store = store ?? Environment.string("HERALD_STORE")
        allowedHosts = allowedHosts ?? Environment.string("HERALD_ALLOWED_HOSTS")
        jwtKey = jwtKey ?? Environment.string("HERALD_JWT_KEY")
        jwtKeyFile = jwtKeyFile ?? Environment.string("HERALD_JWT_KEY_FILE")
        jwtPublicKeyFile = jwtPublicKeyFile ?? Environment.string("HERALD_JWT_PUBLIC_KEY_FILE")
        maxStreams = maxStreams ?? Environment.int("HERALD_MAX_STREAMS")
        trustedProxy = trustedProxy ?? Environment.string("HERALD_TRUSTED_PROXY")
        metricsHost = metricsHost ?? Environment.string("HERALD_METRICS_HOST")
        metricsPort = metricsPort ?? Environment.int("HERALD_METRICS_PORT")
        // Named on the command line, a data directory beside --in-memory or --store is a mistake; from the
        // environment (a container's HERALD_DATA_DIR) it is only the default they replace.
        if let dataDir, inMemory {
            throw ValidationError("give one of --in-memory and --data-dir (\(dataDir)): in memory, nothing is stored anywhere")
        }
        if let dataDir, store != nil {
            throw ValidationError("give one of --store and --data-dir (\(dataDir)): with --store, state is kept in PostgreSQL")
        }
        dataDir = dataDir ?? Environment.string("HERALD_DATA_DIR")
        if let bad = Environment.numbers.first(where: { Environment.string($0) != nil && Environment.int($0) == nil }) {
            throw ValidationError("\(bad) must be a whole number, not '\(Environment.string(bad) ?? "")'")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (0...86_400).contains(heartbeatSeconds) else { throw ValidationError("--heartbeat-seconds must be 0 to 86400") }
        guard (0...86_400).contains(tokenWarningSeconds) else { throw ValidationError("--token-warning-seconds must be 0 to 86400") }
        guard (0...3_600).contains(presenceGraceSeconds) else { throw ValidationError("--presence-grace-seconds must be 0 to 3600") }
        guard (0...1_000_000).contains(presenceUsers) else { throw ValidationError("--presence-users must be 0 to 1000000") }
        guard (4096...1_048_576).contains(connectionMemory) else { throw ValidationError("--connection-memory must be 4096 to 1048576") }
        guard (1...1_000_000).contains(observerQueue) else { throw ValidationError("--observer-queue must be 1 to 1000000") }
        guard ((64 << 10)...(1 << 40)).contains(observerQueueBytes) else {
            throw ValidationError("--observer-queue-bytes must be 65536 (64 KiB) to 1099511627776 (1 TiB)")
        }
        guard (1...10_000_000).contains(history) else { throw ValidationError("--history-events must be 1 to 10000000") }
        guard ((1 << 20)...(1 << 40)).contains(historyBytes) else { throw ValidationError("--history-bytes must be 1048576 (1 MiB) to 1099511627776 (1 TiB)") }
        guard (0...36_500).contains(historyDays) else { throw ValidationError("--history-days must be 0 to 36500") }
        guard Self.isOriginList(corsOrigin) else {
            throw ValidationError("--cors-origin must be * or a comma-separated list of origins such as https://a.example")
        }
        if let allowedHosts, allowedHosts != "*", Self.hostList(allowedHosts) == nil {
            throw ValidationError("--allowed-hosts must be * or a comma-separated list of host names (name or name:port)")
        }
        guard Synchronous(rawValue: sync) != nil else { throw ValidationError("--sync must be normal or full") }
        if let store {
            guard store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
                throw ValidationError("--store must be a PostgreSQL URL: postgres://user@host:port/database")
            }
            guard !inMemory else { throw ValidationError("give one of --store and --in-memory") }
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical") }
        guard [jwtKey, jwtKeyFile, jwtPublicKeyFile].compactMap({ $0 }).count <= 1 else {
            throw ValidationError("give one of --jwt-key, --jwt-key-file and --jwt-public-key-file")
        }
        guard (0...1_000_000).contains(streamsPerAddress) else { throw ValidationError("--streams-per-address must be 0 to 1000000") }
        if let maxStreams, !(HTTPServer.streamFloor...1_000_000).contains(maxStreams) {
            throw ValidationError("--max-streams must be \(HTTPServer.streamFloor) to 1000000 (fewer would leave no room for a stream per loop and a probe)")
        }
        guard (1...StreamEngine.threadLimit).contains(streamThreads) else { throw ValidationError("--stream-threads must be 1 to \(StreamEngine.threadLimit)") }
        guard (0...1_000_000).contains(connectionsPerSecond) else { throw ValidationError("--connections-per-second must be 0 to 1000000") }
        guard (0...1_000_000).contains(connectionsPerAddress) else { throw ValidationError("--connections-per-address must be 0 to 1000000") }
        guard (0...1_000_000).contains(writesPerSecond) else { throw ValidationError("--writes-per-second must be 0 to 1000000") }
        guard (1...3600).contains(headerTimeout) else { throw ValidationError("--header-timeout must be 1 to 3600 seconds") }
        guard (1...3600).contains(requestTimeout) else { throw ValidationError("--request-timeout must be 1 to 3600 seconds") }
        guard (1024...1_048_576).contains(maxHeaderBytes) else { throw ValidationError("--max-header-bytes must be 1024 to 1048576") }
        guard (256...1_048_576).contains(maxUrlBytes) else { throw ValidationError("--max-url-bytes must be 256 to 1048576") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json") }
        if let metricsPort, !(0...65535).contains(metricsPort) { throw ValidationError("--metrics-port must be 0 to 65535") }
        if metricsHost != nil, metricsPort == nil { throw ValidationError("--metrics-host needs --metrics-port") }
        if noMetrics, metricsPort != nil { throw ValidationError("--metrics-port serves /metrics, which --no-metrics turns off") }
        guard (0...300).contains(drainSeconds) else { throw ValidationError("--drain-seconds must be 0 to 300") }
        if let trustedProxy, Self.addressRanges(trustedProxy) == nil {
            throw ValidationError("--trusted-proxy must be addresses or CIDR ranges, comma-separated (10.0.0.0/8,::1)")
        }
    }

    /// Comma-separated addresses or CIDR ranges; nil when one is neither.
    static func addressRanges(_ text: String) -> [AddressRange]? {
        let ranges = text.split(separator: ",").map { AddressRange($0.trimmingCharacters(in: .whitespaces)) }
        guard !ranges.isEmpty, ranges.allSatisfy({ $0 != nil }) else { return nil }
        return ranges.compactMap { $0 }
    }

    func run() throws {
        // First, before any thread exists: a SIGTERM sent as soon as the server answers is never lost.
        let termination = Termination()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
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
        configuration.http.expiryWarning = .seconds(tokenWarningSeconds)
        configuration.presenceGrace = TimeInterval(presenceGraceSeconds)
        configuration.presenceUsers = presenceUsers
        configuration.history = history
        configuration.historyBytes = historyBytes
        configuration.historyDays = historyDays > 0 ? historyDays : nil
        configuration.dataDirectory = inMemory || store != nil ? nil : dataDir ?? "./herald-data"
        configuration.postgresURL = store
        configuration.synchronous = Synchronous(rawValue: sync) ?? .normal
        configuration.observerQueueLimit = observerQueue
        configuration.observerQueueBytes = observerQueueBytes
        configuration.corsOrigin = corsOrigin
        configuration.http.allowedHosts = allowedHosts == "*" ? nil : allowedHosts.flatMap(Self.hostList) ?? Self.loopbackHosts(host)
        configuration.examples = !noExamples
        configuration.publicStreams = publicStreams
        configuration.writesPerSecond = writesPerSecond > 0 ? writesPerSecond : nil
        configuration.http.streamsPerClient = streamsPerAddress > 0 ? streamsPerAddress : nil
        configuration.http.streamLimit = maxStreams
        configuration.http.streamThreads = streamThreads
        configuration.http.connectionsPerSecond = connectionsPerSecond > 0 ? connectionsPerSecond : nil
        configuration.http.connectionsPerAddress = connectionsPerAddress > 0 ? connectionsPerAddress : nil
        configuration.http.headerTimeout = .seconds(headerTimeout)
        configuration.http.requestTimeout = .seconds(requestTimeout)
        configuration.http.headerBytesLimit = maxHeaderBytes
        configuration.http.targetBytesLimit = maxUrlBytes
        configuration.http.connectionMemoryLimit = max(connectionMemory, maxHeaderBytes + maxUrlBytes)
        configuration.http.trustedProxies = trustedProxy.flatMap(Self.addressRanges) ?? []
        configuration.metrics = !noMetrics
        configuration.metricsListener = metricsPort.map { (metricsHost ?? "127.0.0.1", $0) }
        configuration.accessLog = !noAccessLog
        // The access lines, and the lines of streams opening and closing (also without access lines),
        // at `info` as the logger would write them, but formatted by hand and written in batches off
        // the request threads (`git show dad6eb7:BENCHMARKS.md` "The access log's cost").
        if level <= .info { configuration.accessLines = AccessLog(format: json ? .json : .text) }
        do {
            configuration.tokenKey = try tokenKey()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(64)
        }

        let herald: Herald
        do {
            herald = try Herald(configuration: configuration, logger: logger)
            try herald.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        // Libraries that count through swift-metrics count into Herald's /metrics too.
        if let metrics = herald.metrics { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics.registry)) }
        logger.info("ready", metadata: ["open.files": "\(openFiles)"])
        var signal = termination.wait()
        while signal == SIGHUP {
            reloadKeys(herald, logger: logger)
            signal = termination.wait()
        }
        if signal == SIGTERM, drainSeconds > 0 {
            // A balancer polling /health/ready sees 503 and stops sending; the streams still run.
            herald.beginDraining()
            logger.info("draining before stopping", metadata: ["drain.seconds": "\(drainSeconds)"])
            _ = termination.wait(seconds: drainSeconds)
        }
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

    /// Host names, `name:port` or `name:*`, as `RequestGuard` compares them; nil when one is not a host.
    static func hostList(_ text: String) -> [String]? {
        let hosts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let isHost = { (host: Substring) in
            !host.isEmpty && host.count <= 255
                && host.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-._:[]".unicodeScalars.contains($0) }
        }
        guard !hosts.isEmpty, hosts.allSatisfy({ isHost($0.hasSuffix(":*") ? $0.dropLast(2) : $0[...]) }) else { return nil }
        return hosts
    }

    /// On loopback, only names that lead here: a page on another site whose name an attacker points at
    /// 127.0.0.1 (DNS rebinding) is refused. Elsewhere, any host.
    static func loopbackHosts(_ listen: String) -> [String]? {
        let loopback = listen == "localhost" || listen.hasPrefix("127.") || listen == "::1" || listen == "[::1]"
        guard loopback else { return nil }
        return Array(Set(["127.0.0.1:*", "localhost:*", "[::1]:*", listen.lowercased() + ":*"]))
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
