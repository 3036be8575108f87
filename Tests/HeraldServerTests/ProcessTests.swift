import Foundation
import HeraldTestSupport
import HeraldThreads
import Testing

/// Tests of the `herald` executable as a separate process, seen from outside.
@Suite(.serialized) struct ProcessTests {
    /// A herald with one auction and 1,000 SSE observers of it, each past its snapshot.
    func thousandWatchers() throws -> (HeraldProcess, HTTPClient, String, SSEFleet) {
        let herald = try HeraldProcess(arguments: ["--no-examples"] + HeraldProcess.unlimited)
        let client = HTTPClient(port: herald.port)
        let id = try #require(try client.post("/auctions", #"{"item":"load","countdownSeconds":3600}"#).json["id"] as? String)
        let fleet = try SSEFleet(port: herald.port, path: "/auctions/\(id)/events", count: 1000)
        // Waits are generous: one thread reads 1,000 sockets here, under ASan, on a machine that may be busy.
        #expect(fleet.pump(timeout: 120) { $0.events.allSatisfy { $0.count >= 1 } }, "every observer got its snapshot")
        return (herald, client, id, fleet)
    }

    @Test func aThousandObserversGetEveryEventOfABurstWithFewThreads() throws {
        let (herald, client, id, fleet) = try thousandWatchers()
        defer { fleet.close() }
        #expect(try client.get("/health").json["observers"] as? Int == 1000)

        let burst = 50
        for amount in 1...burst { _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"b","amount":\#(amount)}"#) }
        #expect(fleet.pump(timeout: 120) { $0.events.allSatisfy { $0.count >= 1 + burst } }, "every observer got every bid")
        let threads = try #require(herald.status("Threads"))
        #expect(threads < 32, "server threads: \(threads)")
        for events in fleet.events {
            let bids = events.filter { $0.event == "bid" }
            let amounts = bids.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int }
            #expect(amounts == Array(1...burst), "in order, none lost, none twice")
        }
        #expect(fleet.statuses.allSatisfy { $0 == 200 })
        fleet.close()
        #expect(eventually(timeout: 30) { (try? client.get("/health").json["observers"] as? Int) == 0 }, "observers back to zero")
    }

    @Test func theFanOutBenchmarkLosesNothingAndObserversReturnToZero() throws {
        let herald = try HeraldProcess(arguments: ["--no-examples"] + HeraldProcess.unlimited)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald-bench")
        process.arguments = ["--port", String(herald.port), "--pid", String(herald.process.processIdentifier),
                             "--subscribers", "500", "--events", "20", "--interval-ms", "5", "--idle-seconds", "0.5", "--timeout", "60"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let subscribers = try #require(report["subscribers"] as? [String: Int])
        let events = try #require(report["events"] as? [String: Int])
        #expect(subscribers["connected"] == 500)
        #expect(events["expected"] == 500 * 20)
        #expect(events["received"] == 500 * 20)
        #expect(events["lost"] == 0 && events["duplicated"] == 0 && events["outOfOrder"] == 0)
        let client = HTTPClient(port: herald.port)
        #expect(eventually(timeout: 30) { (try? client.get("/health").json["observers"] as? Int) == 0 }, "counts back to zero")
    }

    @Test func sigtermWithAThousandStreamsAndRequestsInFlightEndsEveryStreamCleanly() throws {
        let (herald, client, id, fleet) = try thousandWatchers()
        defer { fleet.close() }
        // 50 requests on their own connections, in flight while the signal arrives.
        let port = herald.port
        let group = DispatchGroup()
        for amount in 1...50 {
            DispatchQueue.global().async(group: group) {
                _ = try? HTTPClient(port: port).post("/auctions/\(id)/bids", #"{"bidder":"b","amount":\#(amount)}"#)
            }
        }
        let start = Date()
        herald.process.terminate()
        #expect(fleet.pump(timeout: 60) { $0.closedCount == $0.count }, "every stream ended")
        #expect(fleet.cleanEndCount == 1000, "ended with the last chunk, not cut off: \(fleet.cleanEndCount)")
        group.wait()
        herald.process.waitUntilExit()
        #expect(herald.process.terminationStatus == 0, "\(herald.log.text.suffix(3000))")
        // The documented bound is the drain (2 s) and the cut-off of streams that do not read (5 s); the
        // wait allows a loaded machine far more.
        #expect(Date().timeIntervalSince(start) < 30)
    }

    /// Every thread is one of Herald's own, named (docs/ARCHITECTURE.md, "The threads"): no dispatch
    /// queue's worker, which a dispatch timer (presence's second, once) would start. Presence ticks
    /// from the start; the wait lets it tick twice, with a stream and a store open.
    @Test func everyThreadIsOneOfHeraldsOwn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-threads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let herald = try HeraldProcess(arguments: HeraldProcess.unlimited, dataDirectory: directory)
        let stream = try SSEClient(port: herald.port, path: "/currency/events")
        _ = try stream.next()
        #expect(try HTTPClient(port: herald.port).put("/currency", #"{"default":"euro"}"#).status == 200)
        Thread.sleep(forTimeInterval: 2.5)
        let tasks = "/proc/\(herald.process.processIdentifier)/task"
        let names = try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap { task in
            try? String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(names.contains("herald-timers"), "presence ticks on the timers' thread: \(names)")
        let strangers = names.filter { !($0 == "herald" || $0.hasPrefix("herald-") || $0.hasPrefix("MHD-")) }
        #expect(strangers.isEmpty, "threads that are not Herald's: \(strangers) of \(names)")
        // `herald` is the main thread alone: a thread that is not named takes the process's name.
        #expect(names.filter { $0 == "herald" }.count == 1, "one thread named as the process, the main one: \(names)")
        #expect(names.contains("herald-access-l"), "the access log's thread, named (15 bytes): \(names)")
    }

    /// libmicrohttpd's thread (once it has served a request) and the stream engine's loops are batch
    /// threads (`SCHED_BATCH`), which a wake-up never lets take the core from the thread that has it;
    /// the writer is an ordinary one. The request thread as an ordinary thread took the core from the
    /// writer at every answer the writer gave (`git show dad6eb7:BENCHMARKS.md`, "The request thread as a batch thread").
    @Test func theRequestThreadAndTheLoopsAreBatchThreadsAndTheWriterIsNot() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-policy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let herald = try HeraldProcess(arguments: HeraldProcess.unlimited, dataDirectory: directory)
        #expect(try HTTPClient(port: herald.port).put("/units/probe", #"{"name":"Probe","status":"healthy"}"#).status == 201)
        let tasks = "/proc/\(herald.process.processIdentifier)/task"
        var policies: [String: [Int]] = [:]  // by thread name
        for task in try FileManager.default.contentsOfDirectory(atPath: tasks) {
            guard let stat = try? String(contentsOfFile: "\(tasks)/\(task)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
            // proc(5): the name in parentheses is field 2, the policy field 41.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 38, let policy = Int(fields[38]) else { continue }
            policies[String(stat[stat.index(after: open)..<close]), default: []].append(policy)
        }
        let batch = 3, ordinary = 0
        #expect(policies.filter { $0.key.hasPrefix("MHD-") }.values.contains([batch]), "\(policies)")
        #expect(policies["herald-streams"] == [batch], "\(policies)")
        #expect(policies["herald-writer"] == [ordinary], "\(policies)")
    }

    /// Herald's log goes to a pipe whose reader is gone (a collector that died, `herald | tee` ended):
    /// each line's write fails with EPIPE, and Herald goes on answering. By default SIGPIPE would end
    /// it at the first line.
    @Test func aLogPipeWithoutAReaderDoesNotEndHerald() throws {
        let herald = try HeraldProcess(closingItsLog: true)
        let (process, port) = (herald.process, herald.port)
        #expect(eventually { herald.logLetGo.withLock { $0 } }, "nobody reads its log any more")
        // Each request writes an access line.
        for _ in 0..<5 {
            #expect(try HTTPClient(port: port).get("/health").status == 200)
        }
        #expect(try HTTPClient(port: port).put("/currency", #"{"default":"euro"}"#).status == 200)
        // The access log writes its lines within 200 ms of their request (`AccessLog`): they have
        // been tried after this, and a process that was to die of them has.
        Thread.sleep(forTimeInterval: 1)
        #expect((try? HTTPClient(port: port).get("/currency").json["default"] as? String) == "euro")
        #expect(process.isRunning, "herald is still running (status \(process.isRunning ? 0 : process.terminationStatus))")
    }

    @Test func sigtermEndsStreamsCleanlyAndExitsZero() throws {
        let herald = try HeraldProcess(arguments: HeraldProcess.unlimited)
        let stream = try SSEClient(port: herald.port, path: "/currency/events")
        _ = try stream.next()
        let start = Date()
        herald.process.terminate()
        #expect(stream.awaitEnd(timeout: 30), "the stream ended")
        herald.process.waitUntilExit()
        #expect(herald.process.terminationStatus == 0)
        #expect(Date().timeIntervalSince(start) < 30, "the documented bound (docs/operations.md) is 7 s; the wait allows a loaded machine more")
        #expect(throws: (any Error).self) { try HTTPClient(port: herald.port).get("/health") }
    }

    @Test func sigtermTurnsReadinessOffBeforeTheStreamsEnd() throws {
        let herald = try HeraldProcess(arguments: HeraldProcess.unlimited + ["--drain-seconds", "6"])
        let client = HTTPClient(port: herald.port)
        #expect(try client.get("/health/ready").status == 200)
        let stream = try SSEClient(port: herald.port, path: "/currency/events")
        #expect(try stream.next().event == "snapshot")
        let start = Date()
        herald.process.terminate()
        #expect(eventually(timeout: 30) { (try? HTTPClient(port: herald.port).get("/health/ready").status) == 503 },
                "not ready within the drain")
        // Draining: the stream is open and still served, and so are changes.
        #expect(!stream.ended)
        #expect(try HTTPClient(port: herald.port).put("/currency", #"{"default":"euro"}"#).status == 200)
        #expect(try stream.next(named: "currency").json["default"] as? String == "euro")
        #expect(stream.awaitEnd(timeout: 30), "the stream ended once the drain was over")
        let ended = Date().timeIntervalSince(start)
        #expect(ended > 5.5, "not before the 6 s drain: \(ended)")
        herald.process.waitUntilExit()
        #expect(herald.process.terminationStatus == 0)
    }

    @Test func jsonLogsAreOneObjectPerLineCarryingTheRequestID() throws {
        let herald = try HeraldProcess(arguments: ["--log-format", "json"])
        #expect(try HTTPClient(port: herald.port).request("GET", "/auctions/1", headers: [("X-Request-ID", "json-7")]).status == 200)
        #expect(eventually { herald.log.text.contains("json-7") })
        var access: [String: String]?
        for line in herald.log.text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
            #expect(object["time"] != nil && object["level"] != nil && object["message"] != nil)
            if object["http.request_id"] == "json-7" { access = object }
        }
        let line = try #require(access)
        #expect(line["message"] == "request")
        #expect(line["http.route"] == "/auctions/{id}")
        #expect(line["http.status"] == "200")
        #expect(Double(line["http.duration_ms"] ?? "") != nil)
    }

    /// Nothing a client sends reaches the text log as a control sequence: ESC in a path (raw, or
    /// percent-encoded) is written escaped, so a terminal showing the log runs nothing.
    @Test func controlCharactersFromARequestAreEscapedInTheTextLog() throws {
        let herald = try HeraldProcess()
        let socket = try Socket(port: herald.port)
        try socket.send("GET /units/\u{1B}[2Jraw HTTP/1.1\r\nHost: x\r\nX-Request-ID: esc-raw\r\nConnection: close\r\n\r\n")
        _ = try? socket.receive()
        #expect(try HTTPClient(port: herald.port).get("/units/%1B%5B2Jdecoded", headers: [("X-Request-ID", "esc-1")]).status == 404)
        #expect(eventually(timeout: 30) { herald.log.text.contains("esc-1") })
        let text = herald.log.text
        #expect(!text.unicodeScalars.contains("\u{1B}"), "a raw ESC in the log: \(text.suffix(2000).debugDescription)")
        #expect(text.contains("\\u{1B}"), "the ESC is written escaped: \(text.suffix(2000))")
    }

    /// Runs herald with `arguments` and `environment` added; returns its exit status (it must stop by itself).
    func exitStatus(_ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
        let process = Process()
        process.executableURL = heraldExecutable()
        process.arguments = ["--in-memory", "--port", "0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate(); process.waitUntilExit(); return -1 }
        return process.terminationStatus
    }

    @Test func heraldTokenPrintsATokenTheServerTakes() throws {
        let secret = "process-test-secret-0123456789abcdef"
        let process = Process()
        let output = Pipe()
        process.executableURL = heraldExecutable()
        process.arguments = ["token", "--key", secret, "--sub", "ann", "--publish", "auctions/*", "--subscribe", "*", "--ttl", "15m"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let token = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.split(separator: ".").count == 3)
        let herald = try HeraldProcess(arguments: ["--jwt-key", secret])
        let client = HTTPClient(port: herald.port)
        let bid = try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":150}"#, headers: [("Authorization", "Bearer \(token)")])
        #expect(bid.status == 201)
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 401)
        #expect(herald.log.text.contains("tokens required"))
        // A bad --ttl or no pattern is a usage error.
        for arguments in [["--ttl", "forever"], ["--ttl", "0s"], []] {
            let bad = Process()
            bad.executableURL = heraldExecutable()
            bad.arguments = ["token", "--key", secret, "--sub", "ann"] + (arguments.isEmpty ? [] : ["--publish", "*"] + arguments)
            bad.standardOutput = FileHandle.nullDevice
            bad.standardError = FileHandle.nullDevice
            try bad.run()
            bad.waitUntilExit()
            #expect(bad.terminationStatus == 64, "\(arguments)")
        }
    }

    @Test func optionsOutOfRangeAreAUsageError() throws {
        let refused: [[String]] = [
            ["--port", "70000"], ["--heartbeat-seconds", "2147484"], ["--heartbeat-seconds", "-1"],
            ["--observer-queue", "9223372036854775807"], ["--observer-queue", "0"], ["--connection-memory", "999999999999"],
            ["--history-events", "0"], ["--history-days", "99999999"], ["--cors-origin", "https://a.example\r\nX-Evil: 1"],
            ["--cors-origin", "not an origin"], ["--allowed-hosts", "a b"],
            ["--jwt-key", "too-short"], ["--jwt-key", "0123456789abcdef0123456789abcdef", "--jwt-public-key-file", "/nonexistent"],
            ["--jwt-public-key-file", "/nonexistent"], ["--header-timeout", "0"], ["--trusted-proxy", "10.0.0.0/33"],
            ["--trusted-proxy", "proxy.example"], ["--streams-per-address", "-1"], ["--max-header-bytes", "10"],
            ["--log-format", "xml"], ["--metrics-port", "70000"], ["--metrics-host", "127.0.0.1"], ["--no-metrics", "--metrics-port", "9100"],
            ["--drain-seconds", "-1"], ["--drain-seconds", "301"], ["--history-bytes", "1000"], ["--history-bytes", "9999999999999"],
            ["--request-timeout", "0"], ["--request-timeout", "3601"], ["--stream-threads", "0"], ["--stream-threads", "65"],
            ["--store", "mysql://db/herald"], ["--store", "./herald-data"], ["--store", "postgres://db/herald", "--in-memory"],
            ["--max-streams", "1"], ["--max-streams", "15"],
        ]
        for arguments in refused {
            #expect(try exitStatus(arguments) == 64, "\(arguments)")
        }
        // Every numeric variable is parsed and refused as its flag is, and `--help` names every variable.
        let numbers = ["HERALD_PORT", "HERALD_HEARTBEAT_SECONDS", "HERALD_HISTORY_EVENTS", "HERALD_HISTORY", "HERALD_HISTORY_BYTES",
                       "HERALD_HISTORY_DAYS", "HERALD_OBSERVER_QUEUE", "HERALD_OBSERVER_QUEUE_BYTES", "HERALD_CONNECTION_MEMORY", "HERALD_STREAMS_PER_ADDRESS",
                       "HERALD_MAX_STREAMS", "HERALD_STREAM_THREADS", "HERALD_CONNECTIONS_PER_SECOND", "HERALD_CONNECTIONS_PER_ADDRESS",
                       "HERALD_WRITES_PER_SECOND", "HERALD_HEADER_TIMEOUT", "HERALD_REQUEST_TIMEOUT", "HERALD_MAX_HEADER_BYTES",
                       "HERALD_MAX_URL_BYTES", "HERALD_METRICS_PORT", "HERALD_DRAIN_SECONDS", "HERALD_TOKEN_WARNING_SECONDS",
                       "HERALD_PRESENCE_GRACE_SECONDS", "HERALD_PRESENCE_USERS"]
        for name in numbers {
            #expect(try exitStatus([], environment: [name: "abc"]) == 64, "\(name)=abc")
        }
        #expect(try exitStatus([], environment: ["HERALD_MAX_STREAMS": "3"]) == 64, "HERALD_MAX_STREAMS below the floor")
        let help = try output(["serve", "--help"]).replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "  ", with: " ")
        for name in numbers + ["HERALD_HOST", "HERALD_STORE", "HERALD_DATA_DIR", "HERALD_IN_MEMORY", "HERALD_JWT_KEY_FILE", "HERALD_TRUSTED_PROXY"] {
            #expect(help.contains(name), "serve --help names \(name)")
        }
        #expect(try output(["--max-streams", "15", "--in-memory"]).contains("must be 16 to"), "the floor is said")
    }

    /// What `herald ARGUMENTS` writes to its standard output and error, together.
    func output(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = heraldExecutable()
        process.arguments = arguments
        let pipe = Pipe()
        (process.standardOutput, process.standardError) = (pipe, pipe)
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }
}

extension ProcessTests {
    /// On loopback with default options, a proxy on this machine may pass its own `Host` on (a loopback
    /// name with any port), and a name another site points at 127.0.0.1 is still refused (421).
    @Test func aProxyOnThisMachineIsAnsweredAndOtherNamesAreMisdirected() throws {
        let herald = try HeraldProcess(arguments: ["--no-examples"])
        func status(_ host: String) throws -> Int {
            let socket = try Socket(port: herald.port, timeout: 10)
            try socket.send("GET /health HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            let head = String(decoding: try socket.receive(), as: UTF8.self)
            return Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        for host in ["localhost:8080", "127.0.0.1:80", "[::1]:8443", "localhost", "LOCALHOST:\(herald.port)", "127.0.0.1:\(herald.port)"] {
            #expect(try status(host) == 200, "\(host)")
        }
        for host in ["evil.example", "evil.example:\(herald.port)", "localhost.evil.example:8080", "127.0.0.2:8080"] {
            #expect(try status(host) == 421, "\(host)")
        }
        #expect(try exitStatus(["--allowed-hosts", "a b:*"]) == 64)
        #expect(try exitStatus(["--allowed-hosts", ":*"]) == 64)
    }
}

extension ProcessTests {
    /// A token's lifetime out of range says the range.
    @Test func aTokensLifetimeOutOfRangeSaysTheRange() throws {
        for ttl in ["0", "3650d", "0s", "forever"] {
            let said = try output(["token", "--key", "0123456789abcdef0123456789abcdef", "--sub", "a", "--publish", "*", "--ttl", ttl])
            #expect(said.contains("from 1 second to 366 days") && said.contains("'\(ttl)'"), "\(ttl): \(said)")
        }
    }

    /// One version everywhere: `herald --version`, `/health`, `herald_server_info`, `openapi.yaml`'s
    /// `info.version`, the container's label, and a section of CHANGELOG.md.
    @Test func theVersionIsTheSameEverywhere() throws {
        let version = try output(["--version"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.split(separator: ".").count == 3 && version.allSatisfy { $0.isNumber || $0 == "." }, "\(version)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let openapi = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(openapi.contains("\n  version: \(version)\n"), "openapi.yaml's info.version")
        let dockerfile = try String(contentsOf: root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        #expect(dockerfile.contains(#"org.opencontainers.image.version="\#(version)""#), "the container's label")
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("\n## [\(version)] - "), "CHANGELOG.md has a section for the version")
        let herald = try HeraldProcess(arguments: ["--no-examples"])
        let client = HTTPClient(port: herald.port)
        #expect(try client.get("/health").json["version"] as? String == version)
        #expect(try client.get("/metrics").text.contains(#"herald_server_info{version="\#(version)"} 1"#))
        #expect(herald.log.text.contains("store in memory"), "an in-memory start says so")
    }

    /// A data directory named beside --in-memory or --store is refused, saying which; from the
    /// environment (a container's HERALD_DATA_DIR) it is only the default they replace.
    @Test func aDataDirectoryBesideAnotherStoreIsRefused() throws {
        #expect(try output(["--in-memory", "--data-dir", "/tmp/x", "--port", "0"]).contains("give one of --in-memory and --data-dir"))
        #expect(try exitStatus(["--data-dir", "/tmp/x"]) == 64, "--in-memory (exitStatus adds it) and --data-dir")
        #expect(try exitStatus(["--port", "0"], environment: ["HERALD_DATA_DIR": "/tmp/herald-never-made"]) == -1,
                "HERALD_DATA_DIR beside --in-memory: it runs (in memory)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/herald-never-made"))
    }
}

extension ProcessTests {
    /// A port that cannot be had says why: in use, or an address that is not this machine's.
    @Test func aPortThatCannotBeHadSaysWhy() throws {
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, length) == 0 && listen(holder, 1) == 0
                && getsockname(holder, $0, &length) == 0 }
        }
        #expect(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        #expect(try output(["--in-memory", "--port", String(port)]).contains("the port is in use by another program"))
        #expect(try output(["--in-memory", "--host", "192.0.2.1", "--port", "0"]).contains("not one of this machine's"))
    }
}
