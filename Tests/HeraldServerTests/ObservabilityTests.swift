import HeraldThreads
import Foundation
import HeraldServer
import HeraldTestSupport
import Logging
import Synchronization
import Testing

/// Log entries kept in memory, as a test's logger writes them.
final class LogEntries: Sendable {
    struct Entry: Sendable {
        let message: String
        let metadata: [String: String]
    }

    private let entries = Lock<[Entry]>([])

    var all: [Entry] { entries.withLock { $0 } }

    func named(_ message: String) -> [Entry] { all.filter { $0.message == message } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(entries: self) }
    }

    fileprivate func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let entries: LogEntries
        var logLevel: Logger.Level = .info
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            entries.append(Entry(message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}

@Suite struct ObservabilityTests {
    @Test func everyAnswerCarriesItsRequestIDAndEveryProblemNamesIt() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let kept = try client.request("GET", "/auctions/404", headers: [("X-Request-ID", "client-42")])
        #expect(kept.status == 404)
        #expect(kept.header("X-Request-ID") == "client-42")
        #expect(kept.json["requestId"] as? String == "client-42")

        // An id that could not go into a log line or a JSON string as it is: one is made instead.
        let unusable = try client.request("GET", "/auctions/404", headers: [("X-Request-ID", "two words\"")])
        let made = try #require(unusable.header("X-Request-ID"))
        #expect(made != "two words\"" && !made.isEmpty)
        #expect(unusable.json["requestId"] as? String == made)

        let first = try #require(try client.get("/currency").header("X-Request-ID"))
        let second = try #require(try client.get("/currency").header("X-Request-ID"))
        #expect(first != second)

        // Refused before any route: the request still has its id.
        let long = try client.request("GET", "/" + String(repeating: "a", count: 9000), headers: [("X-Request-ID", "long-1")])
        #expect(long.status == 414)
        #expect(long.header("X-Request-ID") == "long-1")
        #expect(long.json["requestId"] as? String == "long-1")
    }

    @Test func readinessTurns503WhenDrainingWhileStreamsAndChangesGoOn() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let stream = try server.stream("/currency/events")
        #expect(try stream.next().event == "snapshot")
        let ready = try client.get("/health/ready")
        #expect(ready.status == 200)
        #expect(ready.json["status"] as? String == "ready")
        #expect(try client.get("/health/live").status == 200)

        server.herald.beginDraining()
        let draining = try client.get("/health/ready")
        #expect(draining.status == 503)
        #expect(draining.header("Content-Type") == "application/problem+json")
        #expect((draining.json["detail"] as? String)?.contains("shutting down") == true)
        #expect(try client.get("/health/live").status == 200)
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
        #expect(try stream.next(named: "currency").json["default"] as? String == "euro")
    }

    /// The parts are given what they report to when they are made, so the events of the first batches
    /// (the examples, made before the server starts) are counted as every later one is.
    @Test func metricsCountEveryEventPublishedFromTheFirst() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let lines = try server.client().get("/metrics").text.split(separator: "\n")
        func values(_ prefix: String) -> [Int] {
            lines.filter { $0.hasPrefix(prefix) }.compactMap { $0.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } }
        }
        let last = values("herald_last_event_id ").first ?? 0
        #expect(last > 0, "the examples publish events")
        #expect(values("herald_events_published_total{").reduce(0, +) == last, "every event published is counted once")
    }

    @Test func metricsCountRequestsByRouteAndEventsByType() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        for amount in [10, 20] { #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":\#(amount)}"#).status == 201) }
        #expect(try client.get("/auctions/nope").status == 404)
        let text = try client.get("/metrics")
        #expect(text.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let lines = Set(text.text.split(separator: "\n").map(String.init))
        #expect(lines.contains(#"herald_http_requests_total{method="POST",route="/auctions/{id}/bids",status="201"} 2"#))
        #expect(lines.contains(#"herald_http_requests_total{method="GET",route="/auctions/{id}",status="404"} 1"#))
        #expect(lines.contains(#"herald_events_published_total{type="bid"} 2"#))
    }

    @Test func metricsCanBeKeptOffThePublicListenerOrOff() throws {
        let separate = try TestHerald { $0.metricsListener = ("127.0.0.1", 0) }
        defer { separate.stop() }
        #expect(try separate.client().get("/metrics").status == 404)
        let port = try #require(separate.herald.metricsPort)
        let scraped = try HTTPClient(port: port).get("/metrics")
        #expect(scraped.status == 200)
        #expect(scraped.text.contains("herald_streams_open"))

        let off = try TestHerald { $0.metrics = false }
        defer { off.stop() }
        #expect(try off.client().get("/metrics").status == 404)
        #expect(off.herald.metrics == nil)
    }

    @Test func theAccessLogNamesEachRequestAndStreamsLogTheirOpeningAndClosing() throws {
        let log = LogEntries()
        let server = try TestHerald(logger: log.logger)
        defer { server.stop() }
        let client = server.client()
        #expect(try client.request("GET", "/currency", headers: [("X-Request-ID", "access-1")]).status == 200)
        let line = try #require(log.named("request").first { $0.metadata["http.request_id"] == "access-1" })
        #expect(line.metadata["http.route"] == "/currency")
        #expect(line.metadata["http.status"] == "200")
        #expect(line.metadata["http.method"] == "GET")
        #expect(Double(line.metadata["http.duration_ms"] ?? "") != nil)

        let stream = try server.stream("/currency/events", headers: [("X-Request-ID", "stream-1")])
        #expect(try stream.next().event == "snapshot")
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
        #expect(try stream.next(named: "currency").json["default"] as? String == "euro")
        #expect(eventually { log.named("stream opened").contains { $0.metadata["http.request_id"] == "stream-1" } })
        stream.close()
        #expect(eventually { log.named("stream closed").contains { $0.metadata["http.request_id"] == "stream-1" } })
        let closed = try #require(log.named("stream closed").first { $0.metadata["http.request_id"] == "stream-1" })
        #expect(closed.metadata["stream.events"] == "2")
        #expect(closed.metadata["stream.end"] == "client left")
        #expect(Double(closed.metadata["stream.duration_ms"] ?? "") ?? 0 > 0)
    }

    @Test func withoutTheAccessLogOnlyStreamsAreLogged() throws {
        let log = LogEntries()
        let server = try TestHerald(logger: log.logger) { $0.accessLog = false }
        defer { server.stop() }
        #expect(try server.client().get("/currency").status == 200)
        let stream = try server.stream("/currency/events")
        #expect(try stream.next().event == "snapshot")
        // The line is logged once the head is answered, which may be after the snapshot has arrived.
        #expect(eventually { log.named("stream opened").count == 1 })
        #expect(log.named("request").isEmpty)
    }

    @Test func aJSONLogLineIsOneObjectWithTimeLevelMessageAndMetadata() throws {
        let time = Date(timeIntervalSince1970: 1_795_401_519.0425)
        let bytes = JSONLogHandler.line(time: time, level: .info, message: "said \"hi\"\nand left", label: "herald",
                                        metadata: ["http.request_id": "r-9", "http.status": "201"])
        #expect(bytes.last == 0x0A)
        #expect(bytes.dropLast().allSatisfy { $0 != 0x0A }, "one line, whatever the message holds")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
        #expect(object["time"] == "2026-11-23T02:38:39.042Z")
        #expect(object["level"] == "info")
        #expect(object["message"] == "said \"hi\"\nand left")
        #expect(object["http.request_id"] == "r-9")
        #expect(object["http.status"] == "201")
    }
}
