import Foundation
import HeraldHTTP
@testable import HeraldServer
import HeraldTestSupport
import Logging
import Testing

/// The access log written by hand (`AccessLog`): the same lines the logger wrote before, byte for
/// byte, and none lost when Herald stops right after its requests.
@Suite struct AccessLogTests {
    static let exchanges = [
        Exchange(method: "GET", path: "/auctions/1", route: "/auctions/{id}", status: 200, duration: .microseconds(1544),
                 requestID: "abc", client: "127.0.0.1", isStream: false),
        Exchange(method: "PUT", path: "/units/\u{1B}[2J\\é\u{85}", route: nil, status: 404, duration: .seconds(12),
                 requestID: "r\"9", client: "::1", isStream: false),
        Exchange(method: "POST", path: "/auctions", route: "/auctions", status: 201, duration: .microseconds(20),
                 requestID: "x", client: "10.0.0.1", isStream: false),
        Exchange(method: "GET", path: "/auctions/1/events", route: "/auctions/{id}/events", status: 200, duration: .microseconds(310),
                 requestID: "s\u{7}1", client: "127.0.0.1", isStream: true),
    ]

    static let summaries = [
        StreamSummary(requestID: "s1", client: "127.0.0.1", path: "/auctions/1/events", duration: .seconds(61), events: 12, end: .clientLeft),
        StreamSummary(requestID: "q\"", client: "::1", path: "/units/\u{1B}é", duration: .microseconds(7), events: 0, end: .shutdown),
    ]

    /// Milliseconds with three decimals, as a Double: what the logger's lines printed before.
    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds * 1_000_000 + attoseconds / 1_000_000_000_000) / 1000
    }

    /// The message the logger's line had.
    static func message(_ exchange: Exchange) -> String { exchange.isStream ? "stream opened" : "request" }

    /// The metadata `Telemetry.streamEnded` gave the logger.
    static func metadata(_ summary: StreamSummary) -> Logger.Metadata {
        ["http.request_id": "\(summary.requestID)", "http.path": "\(summary.path)", "http.client": "\(summary.client)",
         "stream.duration_ms": "\(Self.milliseconds(summary.duration))", "stream.events": "\(summary.events)",
         "stream.end": "\(summary.end.rawValue)"]
    }

    static func metadata(_ exchange: Exchange) -> Logger.Metadata {
        ["http.request_id": "\(exchange.requestID)", "http.method": "\(exchange.method)", "http.path": "\(exchange.path)",
         "http.route": "\(exchange.route ?? "-")", "http.status": "\(exchange.status)",
         "http.duration_ms": "\(Self.milliseconds(exchange.duration))", "http.client": "\(exchange.client)"]
    }

    /// JSON: the bytes `JSONLogHandler` makes of the same line, at the same millisecond.
    @Test func jsonLinesAreTheLoggersLines() {
        let second = 1_764_118_000
        for exchange in Self.exchanges {
            for milliseconds in [0, 7, 42, 999] {
                let time = Date(timeIntervalSince1970: Double(second) + Double(milliseconds) / 1000 + 0.0004)
                let expected = JSONLogHandler.line(time: time, level: .info, message: Self.message(exchange), label: "herald",
                                                   metadata: Self.metadata(exchange))
                let line = AccessLog.line(exchange, second: second, milliseconds: milliseconds, format: .json)
                #expect(line == expected, "\(String(decoding: line, as: UTF8.self)) vs \(String(decoding: expected, as: UTF8.self))")
            }
        }
        for summary in Self.summaries {
            let time = Date(timeIntervalSince1970: Double(second) + 0.0424)
            let expected = JSONLogHandler.line(time: time, level: .info, message: "stream closed", label: "herald", metadata: Self.metadata(summary))
            let line = AccessLog.line(summary, second: second, milliseconds: 42, format: .json)
            #expect(line == expected, "\(String(decoding: line, as: UTF8.self)) vs \(String(decoding: expected, as: UTF8.self))")
        }
    }

    /// Text: swift-log's `StreamLogHandler` line (local time to the second, the level, the label, the
    /// metadata sorted, the source module, the message), with values escaped as `EscapingLogHandler` does.
    @Test func textLinesAreTheLoggersLines() {
        let second = 1_764_118_000
        var time = time_t(second)
        var parts = tm()
        localtime_r(&time, &parts)
        var buffer = [Int8](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        let stamp = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        func fields(_ metadata: Logger.Metadata) -> String {
            metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\(EscapingLogHandler.escaped("\($0.value)"))" }.joined(separator: " ")
        }
        for exchange in Self.exchanges {
            let expected = "\(stamp) info herald: \(fields(Self.metadata(exchange))) [HeraldServer] \(Self.message(exchange))\n"
            let line = String(decoding: AccessLog.line(exchange, second: second, milliseconds: 5, format: .text), as: UTF8.self)
            #expect(line == expected)
        }
        for summary in Self.summaries {
            let expected = "\(stamp) info herald: \(fields(Self.metadata(summary))) [HeraldServer] stream closed\n"
            let line = String(decoding: AccessLog.line(summary, second: second, milliseconds: 5, format: .text), as: UTF8.self)
            #expect(line == expected)
        }
    }

    /// The figures in a duration: whole microseconds, as a Double prints them.
    @Test func durationsPrintAsTheDoubleDid() {
        for microseconds in [0, 1, 10, 100, 999, 1000, 1544, 12_000_000, 123_456_789] {
            let duration = Duration.microseconds(microseconds)
            #expect(String(decoding: AccessLog.milliseconds(duration), as: UTF8.self) == "\(Self.milliseconds(duration))")
        }
    }

    /// Lines are held for the delay (here a minute), but no longer once 256 KiB are pending: then
    /// the writer goes at once.
    @Test func aFullBufferIsWrittenWithoutWaitingForTheDelay() throws {
        let path = temporaryDirectory("access-log")
        let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        #expect(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        let log = AccessLog(format: .json, output: JSONLogHandler.Output(descriptor: descriptor), delay: .seconds(60))
        log.start()
        defer { log.stop() }
        let size = { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        log.record(Self.exchanges[0])
        #expect(!(eventually(timeout: 1) { size() > 0 }), "one line waits for the delay")
        let line = AccessLog.line(Self.exchanges[0], second: 0, milliseconds: 0, format: .json).count
        for _ in 0...(256 * 1024 / line) { log.record(Self.exchanges[0]) }
        #expect(eventually(timeout: 30) { size() >= 256 * 1024 }, "the full buffer is written before the minute's delay")
    }

    /// 300 requests, then SIGTERM at once: every one's line is in the log, in both formats.
    @Test(arguments: [["--log-format", "text"], ["--log-format", "json"]])
    func noLineIsLostAtSIGTERM(_ format: [String]) throws {
        let herald = try HeraldProcess(arguments: format)
        let client = HTTPClient(port: herald.port)
        for index in 0..<300 {
            #expect(try client.request("GET", "/currency", headers: [("X-Request-ID", "last-\(index)")]).status == 200)
        }
        herald.process.terminate()
        herald.process.waitUntilExit()
        #expect(eventually { herald.log.text.contains("herald stopped") })
        let text = herald.log.text
        let missing = (0..<300).filter { !text.contains("last-\($0)\(format[1] == "json" ? "\"" : " ")") }
        #expect(missing.isEmpty, "\(missing.count) lines lost, such as last-\(missing.first ?? -1)")
        if let stopped = text.range(of: "herald stopped"), let lastLine = text.range(of: "last-299") {
            #expect(lastLine.lowerBound < stopped.lowerBound, "the access lines come before the last line")
        } else {
            Issue.record("no 'herald stopped' or no last-299 in the log")
        }
    }
}

extension AccessLogTests {
    /// Without access lines, a stream's opening and closing lines are still written (by the same
    /// writer), and requests have none.
    @Test(arguments: [["--log-format", "text"], ["--log-format", "json"]])
    func streamLinesWithoutAccessLines(_ format: [String]) throws {
        let herald = try HeraldProcess(arguments: format + ["--no-access-log"])
        let client = HTTPClient(port: herald.port)
        #expect(try client.request("GET", "/currency", headers: [("X-Request-ID", "read-1")]).status == 200)
        let stream = try SSEClient(port: herald.port, path: "/currency/events", headers: [("X-Request-ID", "watch-1")])
        #expect(try stream.next().event == "snapshot")
        stream.close()
        let quote = format[1] == "json" ? "\"" : ""
        #expect(eventually { herald.log.text.contains("stream closed") })
        herald.process.terminate()
        herald.process.waitUntilExit()
        let lines = herald.log.text.split(separator: "\n")
        let watch = lines.filter { $0.contains("watch-1") }
        #expect(watch.count == 2, "\(watch)")
        #expect(watch.first?.contains("stream opened") == true)
        #expect(watch.last?.contains("stream closed") == true && watch.last?.contains("client left") == true)
        #expect(watch.first?.contains("http.route\(quote == "" ? "=" : "\":\"")/currency/events") == true, "\(watch)")
        #expect(!lines.contains { $0.contains("read-1") }, "no access line with --no-access-log")
    }
}

extension AccessLogTests {
    /// A stream's id renews it: the access line of a renewal holds a short hash of it, not the id.
    @Test func aRenewalsLineHoldsNoStreamID() async throws {
        let herald = try HeraldProcess(arguments: ["--jwt-key", Tokens.secret])
        let token = try await Tokens.make(expires: Date().addingTimeInterval(3600))
        let stream = try SSEClient(port: herald.port, path: "/currency/events", headers: Tokens.bearer(token))
        let id = try #require(try stream.next(named: "stream").json["stream"] as? String)
        let renewed = try HTTPClient(port: herald.port).request("POST", "/streams/\(id)/token", headers: Tokens.bearer(token) + [("X-Request-ID", "renew-1")])
        #expect(renewed.status == 204)
        #expect(eventually { herald.log.text.contains("renew-1") })
        let line = herald.log.text.split(separator: "\n").first { $0.contains("renew-1") } ?? ""
        #expect(!herald.log.text.contains(id), "the stream's id is not in the log")
        #expect(line.contains("/streams/#"), "\(line)")
    }
}

extension AccessLogTests {
    /// An administrator's end of a stream is logged with a short hash of its id, and the stream's own
    /// line says why it closed.
    @Test func anEndedStreamsLinesHoldNoStreamIDAndSayWhy() async throws {
        let herald = try HeraldProcess(arguments: ["--jwt-key", Tokens.secret])
        let token = try await Tokens.make(expires: Date().addingTimeInterval(3600))
        let admin = try await Tokens.make(sub: "root", publish: [], subscribe: [], admin: true)
        let stream = try SSEClient(port: herald.port, path: "/currency/events", headers: Tokens.bearer(token))
        let id = try #require(try stream.next(named: "stream").json["stream"] as? String)
        let ended = try HTTPClient(port: herald.port).request("DELETE", "/streams/\(id)", headers: Tokens.bearer(admin) + [("X-Request-ID", "end-1")])
        #expect(ended.status == 204)
        #expect(stream.awaitEnd())
        #expect(eventually { herald.log.text.contains("end-1") && herald.log.text.contains("ended by an administrator") })
        let line = herald.log.text.split(separator: "\n").first { $0.contains("end-1") } ?? ""
        #expect(!herald.log.text.contains(id), "the stream's id is not in the log")
        #expect(line.contains("/streams/#"), "\(line)")
    }
}
