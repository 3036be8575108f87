import Foundation
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// The stream engine as clients see it: framing, partial writes, slow and stalled readers, and a
/// publish that does not wait for its fan-out.
@Suite struct StreamEngineTests {
    /// A raw stream read through a strict HTTP parser, its decoded body kept as it arrives.
    final class RawStream {
        let socket: Socket
        var parser = HTTPResponseParser()
        var body: [UInt8] = []
        var ended = false

        init(_ socket: Socket) { self.socket = socket }

        /// Reads until `done` holds for the body, the stream ends, or `timeout` passes; returns `done`'s answer.
        @discardableResult
        func read(timeout: Double, until done: ([UInt8]) -> Bool = { _ in false }) throws -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while !ended, !done(body), Date() < deadline {
                socket.setTimeout(max(deadline.timeIntervalSinceNow, 0.01))
                guard let bytes = try? socket.receive() else { continue }
                if bytes.isEmpty {
                    parser.finish()
                    ended = true
                } else {
                    try parser.feed(bytes)
                    ended = parser.complete
                }
                body += parser.body
                parser.body.removeAll()
            }
            return done(body)
        }

        /// Heartbeat comments in the body so far.
        var heartbeats: Int { String(decoding: body, as: UTF8.self).components(separatedBy: ": heartbeat").count - 1 }
    }

    /// HTTP/1.1 gets chunks and a last chunk at shutdown, HTTP/1.0 a body that ends with the
    /// connection; both carry heartbeats and a burst, byte for byte, through a strict parser.
    @Test func framingIsStrictOnHTTP11AndCloseDelimitedOnHTTP10() throws {
        let server = try TestHerald(heartbeat: .milliseconds(200))
        defer { server.stop() }
        let port = server.port
        let client = HTTPClient(port: port)
        let one = try Socket(port: port)
        try one.send("GET /notifications/framing/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let zero = try Socket(port: port)
        try zero.send("GET /notifications/framing/events HTTP/1.0\r\n\r\n")
        #expect(eventually(timeout: 30) { (try? server.observers(of: "notifications/framing")) == 2 })
        let streams = [(RawStream(one), true), (RawStream(zero), false)]
        for (stream, _) in streams {
            let heartbeat = try stream.read(timeout: 30) { _ in stream.heartbeats >= 1 }
            #expect(heartbeat, "a heartbeat before the burst")
        }
        let burst = 300
        for index in 1...burst {
            let pad = String(repeating: "p", count: index * 7 % 900)
            #expect(try client.post("/notifications/framing", #"{"userInfo":{"n":\#(index),"pad":"\#(pad)"}}"#).status == 202)
        }
        for (stream, _) in streams {
            let all = try stream.read(timeout: 60) { String(decoding: $0.suffix(4000), as: UTF8.self).contains(#""n":\#(burst),"#) }
            #expect(all, "the whole burst arrived")
            let before = stream.heartbeats
            let heartbeat = try stream.read(timeout: 30) { _ in stream.heartbeats > before }
            #expect(heartbeat, "a heartbeat after the burst")
        }
        let herald = server.herald
        Thread { herald.stop() }.start()  // streams end cleanly, once what is queued is read
        for (stream, http11) in streams {
            try stream.read(timeout: 30)
            let (head, body, ended) = (stream.parser.head, stream.body, stream.ended)
            #expect(ended, "the body ended (HTTP/1.1: with its last chunk; HTTP/1.0: with the connection)")
            let head_ = try #require(head)
            #expect(head_.status == 200)
            #expect(head_.header("Content-Type") == "text/event-stream")
            if http11 {
                #expect(head_.header("Transfer-Encoding") == "chunked")
            } else {
                #expect(head_.header("Transfer-Encoding") == nil)
                #expect(head_.header("Connection")?.lowercased() == "close")
            }
            var sse = SSEParser()
            let events = sse.feed(body).filter { $0.event == "notification" }
            let numbers = events.compactMap { ($0.json["userInfo"] as? [String: Any])?["n"] as? Int }
            #expect(numbers == Array(1...burst), "every event once, in order (HTTP/1.\(http11 ? 1 : 0))")
            #expect(sse.comments.filter { $0.contains("heartbeat") }.count >= 2, "heartbeats before and after the burst")
            stream.socket.close()
        }
    }

    /// A client with a small receive buffer that reads slowly makes the server write in parts; it
    /// still gets every byte, in order.
    @Test func aSlowReaderThatKeepsUpGetsEveryByteInOrder() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let slow = try Socket(port: server.port, receiveBuffer: 4096)
        try slow.send("GET /notifications/slow/events HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n")
        #expect(eventually(timeout: 30) { (try? server.observers(of: "notifications/slow")) == 1 })
        let count = 200
        let payload = String(repeating: "s", count: 3000)
        let port = server.port
        let publisher = Thread {
            let client = HTTPClient(port: port)
            for index in 1...count {
                _ = try? client.post("/notifications/slow", #"{"userInfo":{"n":\#(index),"pad":"\#(payload)"}}"#)
            }
        }
        publisher.start()
        var parser = HTTPResponseParser()
        var sse = SSEParser()
        var numbers: [Int] = []
        var pads = 0
        let deadline = Date().addingTimeInterval(60)
        while numbers.count < count, Date() < deadline {
            slow.setTimeout(1)
            guard let bytes = try? slow.receive(max: 1024), !bytes.isEmpty else { continue }
            try parser.feed(bytes)
            for event in sse.feed(parser.body) where event.event == "notification" {
                let info = event.json["userInfo"] as? [String: Any]
                if let number = info?["n"] as? Int { numbers.append(number) }
                if info?["pad"] as? String == payload { pads += 1 }
            }
            parser.body.removeAll()
            Thread.sleep(forTimeInterval: 0.0005)
        }
        #expect(numbers == Array(1...count), "every event, in order")
        #expect(pads == count, "every byte of every event")
        #expect(try server.observers(of: "notifications/slow") == 1, "a slow reader that keeps up is not cut off")
    }

    /// A long replay, which a reconnect storm's clients share, is sent from a file (`ReplayFile`) to
    /// readers with a small receive buffer that read slowly: over HTTP/1.1 as one strict chunk, over
    /// HTTP/1.0 as the bare bytes, each byte once and in order, then live events after it. (Writes in
    /// parts: `StreamEngineFileTests`; loopback's send buffer takes these 300 KB at once.)
    @Test func aLongReplaySentFromItsFileReachesSlowReadersWholeOnBothFramings() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let before = try #require(try client.get("/auctions/\(id)").header("Herald-Event-ID"))
        let count = 100
        let payload = String(repeating: "f", count: 3000)
        for index in 1...count {
            #expect(try client.post("/notifications/file", #"{"userInfo":{"n":\#(index),"pad":"\#(payload)"}}"#).status == 202)
        }
        let port = server.port
        let sockets = try ["HTTP/1.1", "HTTP/1.0"].map { version in
            let socket = try Socket(port: port, receiveBuffer: 4096)
            try socket.send("GET /notifications/file/events \(version)\r\nHost: 127.0.0.1:\(port)\r\nLast-Event-ID: \(before)\r\n\r\n")
            return socket
        }
        var parsers = [HTTPResponseParser(), HTTPResponseParser()]
        var bodies: [[UInt8]] = [[], []]
        func readSlowly(until done: ([UInt8]) -> Bool) throws {
            let deadline = Date().addingTimeInterval(60)
            for (index, socket) in sockets.enumerated() {
                while !done(bodies[index]), Date() < deadline {
                    socket.setTimeout(1)
                    guard let bytes = try? socket.receive(max: 1024), !bytes.isEmpty else { continue }
                    try parsers[index].feed(bytes)
                    bodies[index] += parsers[index].body
                    parsers[index].body.removeAll()
                    Thread.sleep(forTimeInterval: 0.0002)
                }
            }
        }
        let last = Array(#""n":\#(count),"#.utf8)
        try readSlowly { body in body.count > 300_000 && body.suffix(3200).firstRange(of: last) != nil }
        #expect(try client.post("/notifications/file", #"{"userInfo":{"n":\#(count + 1)}}"#).status == 202)
        let marker = Array(#""n":\#(count + 1)}"#.utf8)
        try readSlowly { body in body.suffix(200).firstRange(of: marker) != nil }

        #expect(parsers[0].head?.header("Transfer-Encoding") == "chunked" && parsers[1].head?.header("Transfer-Encoding") == nil)
        let same = bodies[0] == bodies[1]
        #expect(same, "the same bytes on both framings (\(bodies[0].count) and \(bodies[1].count))")
        var sse = SSEParser()
        let events = sse.feed(bodies[0]).filter { $0.event == "notification" }.map { $0.json["userInfo"] as? [String: Any] }
        #expect(events.compactMap { $0?["n"] as? Int } == Array(1...(count + 1)), "every event once, in order, then the live one")
        #expect(events.prefix(count).allSatisfy { $0?["pad"] as? String == payload }, "every byte of every event")
    }

    /// A reader that stops is cut off once its queue is full; reconnecting with the last id it got, it
    /// receives exactly the events it missed.
    @Test func aReaderThatStopsIsCutOffAndResumesExactly() throws {
        let server = try TestHerald(queueLimit: 16)
        defer { server.stop() }
        let client = server.client()
        let stalled = try SSEClient(port: server.port, path: "/notifications/stall/events", receiveBuffer: 4096)
        try stalled.awaitHead()
        let payload = String(repeating: "x", count: 20_000)
        var published: [Int] = []
        var index = 0
        while try server.observers(of: "notifications/stall") == 1, index < 2000 {
            index += 1
            #expect(try client.post("/notifications/stall", #"{"userInfo":{"n":\#(index),"pad":"\#(payload)"}}"#).status == 202)
            published.append(index)
        }
        #expect(try server.observers(of: "notifications/stall") == 0, "the stopped reader was cut off")
        #expect(stalled.awaitEnd(timeout: 30), "and its connection closed")
        var got: [SSEEvent] = []
        while let event = try? stalled.next(timeout: 0.01) { got.append(event) }
        let lastId = try #require(got.last(where: { $0.id != nil })?.id)
        let seen = got.filter { $0.event == "notification" }.compactMap { ($0.json["userInfo"] as? [String: Any])?["n"] as? Int }
        // More is published while it is away.
        for _ in 0..<5 {
            index += 1
            _ = try client.post("/notifications/stall", #"{"userInfo":{"n":\#(index),"pad":"short"}}"#)
            published.append(index)
        }
        let resumed = try server.stream("/notifications/stall/events", headers: [("Last-Event-ID", lastId)])
        var rest: [Int] = []
        while rest.count + seen.count < published.count {
            let event = try resumed.next(timeout: 5)
            #expect(event.event == "notification", "a replay, not a resync: \(event.event ?? "")")
            if let number = (event.json["userInfo"] as? [String: Any])?["n"] as? Int { rest.append(number) }
        }
        #expect(seen + rest == published, "what it saw and what it missed, each once, in order")
    }

    /// Streams past the engine's limit (here its floor of 16) get a 503 problem with `Retry-After`, and
    /// a place freed is taken again.
    @Test func streamsPastTheLimitAreRefusedWithRetryAfter() throws {
        let server = try TestHerald(connectionLimit: 16)
        defer { server.stop() }
        var streams = try (0..<16).map { _ in try server.stream("/currency/events") }
        #expect(streams.allSatisfy { $0.head?.status == 200 })
        let refused = try server.client().get("/currency/events")
        #expect(refused.status == 503)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.header("Retry-After") == "5")
        streams.removeLast().close()
        #expect(eventually(timeout: 30) { (try? server.observers(of: "currency")) == 15 })
        let again = try server.stream("/currency/events")
        #expect(again.head?.status == 200)
        _ = try again.next(timeout: 5)
    }

    /// Once stopping begins nobody new connects, while a stream whose client reads nothing keeps the
    /// server in its grace period.
    @Test func stoppingClosesTheListenerAtOnce() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let port = server.port
        let client = server.client()
        let stalled = try Socket(port: port, receiveBuffer: 4096)
        try stalled.send("GET /notifications/full/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        #expect(eventually(timeout: 30) { (try? server.observers(of: "notifications/full")) == 1 })
        let payload = String(repeating: "f", count: 20_000)
        for _ in 0..<300 { _ = try client.post("/notifications/full", #"{"userInfo":{"pad":"\#(payload)"}}"#) }
        let herald = server.herald
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            herald.stop()
            stopped.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(stopped.wait(timeout: .now()) == .timedOut, "still in its grace period: the stalled stream cannot end")
        #expect(throws: (any Error).self, "a new connection is refused") { try Socket(port: port, timeout: 1) }
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        stalled.close()
    }

    /// A bid does not wait for its fan-out: the events of 40 bids reach 1,000 watchers, and every
    /// batch of them was queued to the observers on the stream engine's thread, never on a thread that
    /// answers requests (the writer's or libmicrohttpd's). The property itself is checked, not a
    /// timing: how fast a bid is answered with many watchers is measured in `Benchmarks/`.
    @Test func aBidDoesNotWaitForItsWatchers() throws {
        let server = try Self.serverForOneAddress()
        defer { server.stop() }
        let client = server.client()
        let (watched, fleet) = try Self.watchedAuction(on: server, watchers: 1000)
        defer { fleet.close() }
        for amount in 1...40 {
            #expect(try client.post("/auctions/\(watched)/bids", #"{"bidder":"b","amount":\#(amount)}"#).status == 201)
        }
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { Self.numbered($0).count >= 41 } }, "every watcher got every bid")
        let threads = server.herald.deliveringThreads
        #expect(!threads.isEmpty && threads.keys.allSatisfy { $0.hasPrefix("herald-streams") }, "fan-out ran on \(threads)")
        #expect(threads.values.reduce(0, +) >= 1)
    }

    /// With three loops (`--stream-threads 3`), 300 watchers are shared out evenly; the events of 40
    /// bids reach every one of them, in order and once each, with each loop queueing the events to its
    /// own share of the watchers; and stopping ends every stream on every loop with its body's last chunk.
    @Test func threeLoopsShareTheStreamsAndEachGetsEveryEvent() throws {
        let server = try Self.serverForOneAddress(streamThreads: 3)
        defer { server.stop() }
        let client = server.client()
        let (watched, fleet) = try Self.watchedAuction(on: server, watchers: 300)
        defer { fleet.close() }
        #expect(server.herald.streamsByThread == [100, 100, 100])
        var ids: [String] = []
        for amount in 1...40 {
            let response = try client.post("/auctions/\(watched)/bids", #"{"bidder":"b","amount":\#(amount)}"#)
            #expect(response.status == 201)
            if let id = response.header("Herald-Event-ID") { ids.append(id) }
        }
        #expect(ids.count == 40)
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { Self.numbered($0).count >= 41 } }, "every watcher got every bid")
        for events in fleet.events {
            #expect(Self.numbered(events).dropFirst().map(\.id) == ids.map(Optional.init), "a watcher's bids, in order and once each")
        }
        #expect(Set(server.herald.deliveringThreads.keys) == ["herald-streams", "herald-streams1", "herald-streams2"],
                "each loop queued its own share of the watchers")
        server.stop()
        #expect(fleet.pump(timeout: 60) { $0.closedCount == 300 })
        #expect(fleet.cleanEndCount == 300, "every stream ended with its last chunk")
    }

    /// A stream's events without the countdown's ticks, which carry no id: the countdown restarts with
    /// each bid, and ticks once a second after the last (a busy machine delivers 40 bids more slowly).
    private static func numbered(_ events: [SSEEvent]) -> [SSEEvent] { events.filter { $0.id != nil } }

    /// A server without the per-address limits: every watcher of these tests comes from 127.0.0.1.
    private static func serverForOneAddress(streamThreads: Int? = nil) throws -> TestHerald {
        try TestHerald {
            ($0.http.streamsPerClient, $0.http.connectionsPerSecond, $0.http.connectionsPerAddress) = (nil, nil, nil)
            if let streamThreads { $0.http.streamThreads = streamThreads }
        }
    }

    /// An auction that runs for an hour, and `watchers` streams of it, each past its snapshot.
    private static func watchedAuction(on server: TestHerald, watchers: Int) throws -> (id: String, fleet: SSEFleet) {
        let watched = try server.auction(countdown: 3600)
        let fleet = try SSEFleet(port: server.port, path: "/auctions/\(watched)/events", count: watchers)
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.count >= 1 } }, "every watcher got its snapshot")
        return (watched, fleet)
    }
}
