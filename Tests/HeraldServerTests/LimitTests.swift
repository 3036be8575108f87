import Foundation
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

@Suite struct LimitTests {
    @Test func theStreamPastAnAddressesLimitIs429AndOneClosedMakesRoom() throws {
        // The default limit: 100 streams per address.
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        var streams: [SSEClient] = []
        for _ in 0..<100 { streams.append(try server.stream("/currency/events")) }
        let refused = try server.client().get("/currency/events")
        #expect(refused.status == 429)
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.header("Connection")?.lowercased() == "close")
        // And the connection is closed after the answer, as every other refusal's is.
        let raw = try Socket(port: server.port, timeout: 15)
        try raw.send("GET /currency/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var answer: [UInt8] = [], closed = false
        while !closed, let bytes = try? raw.receive() { if bytes.isEmpty { closed = true } else { answer += bytes } }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 429"))
        #expect(closed, "the connection ends after the refusal")
        #expect(try server.observers(of: "currency") == 100)
        streams.removeLast().close()
        #expect(eventually(timeout: 30) { (try? server.observers(of: "currency")) == 99 })
        let again = try SSEClient(port: server.port, path: "/currency/events")
        #expect(try again.awaitHead().status == 200)
    }

    /// Sends `start`, then `byte` every round, each round at least 0.2 s (the socket's timeout): 100
    /// rounds go on for 20 s or more, far past a 1 s deadline. Meanwhile another client must be
    /// served at once. Returns whether the server closed the connection (a broken pipe, or EOF).
    static func trickleUntilClosed(_ server: TestHerald, start: String, byte: String) throws -> Bool {
        let trickler = try Socket(port: server.port, timeout: 0.2)
        try trickler.send(start)
        for _ in 0..<100 {
            if (try? trickler.send(byte)) == nil { return true }
            if let bytes = try? trickler.receive(), bytes.isEmpty { return true }
            #expect(try server.client().get("/health").status == 200)
        }
        return false
    }

    @Test func aSlowHeadIsCutOffWhileOthersAreServed() throws {
        let server = try TestHerald { $0.http.headerTimeout = .seconds(1) }
        defer { server.stop() }
        // One sends nothing; one trickles its head a byte at a time, faster than any idle timeout.
        let silent = try Socket(port: server.port, timeout: 30)
        let trickleClosed = try Self.trickleUntilClosed(server, start: "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", byte: "X")
        #expect(trickleClosed, "a head trickled for 20 s was not cut off")
        #expect(try silent.receive().isEmpty, "a client that sent nothing kept its connection")
    }

    /// A body that drips (Content-Length 1000, a byte at a time) is cut off at `--request-timeout`,
    /// while other clients are served; nothing it sent is taken as a change.
    @Test func aDrippingBodyIsCutOffWhileOthersAreServed() throws {
        let server = try TestHerald { $0.http.requestTimeout = .seconds(1) }
        defer { server.stop() }
        let head = "PUT /units/drip HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        #expect(try Self.trickleUntilClosed(server, start: head, byte: " "), "a body dripped for 20 s was not cut off")
        #expect(try server.client().get("/units/drip").status == 404)
        // A body that comes whole is not cut off by its answer's wait.
        #expect(try server.client().put("/units/whole", #"{"name":"W","status":"healthy"}"#).status == 201)
    }

    @Test func aWriteFloodFromOneTokenIsLimitedWhileAnothersWritesGoThrough() async throws {
        let server = try await TestHerald.secured { $0.writesPerSecond = 5 }
        defer { server.stop() }
        let client = server.client()
        let flooder = try await Tokens.make(sub: "flood", publish: ["*"])
        let other = try await Tokens.make(sub: "calm", publish: ["*"])
        var statuses: [Int] = []
        let start = ContinuousClock.now
        for index in 0..<30 {
            let response = try client.request("PUT", "/units/u\(index)", json: #"{"name":"U","status":"healthy"}"#, headers: Tokens.bearer(flooder))
            statuses.append(response.status)
            if response.status == 429 {
                #expect(Int(response.header("Retry-After") ?? "") ?? 0 >= 1)
                #expect(response.header("Content-Type") == "application/problem+json")
            }
        }
        let accepted = statuses.filter { $0 == 201 }.count
        // A burst of twice the rate at once, then 5 a second: however slow the machine, no more than
        // the loop's time allows (the arithmetic itself is tested on a fixed clock below).
        #expect(statuses.prefix(10).allSatisfy { $0 == 201 }, "\(statuses)")
        #expect(accepted <= Self.allowed(burst: 10, rate: 5, since: start), "\(statuses)")
        #expect(statuses.contains(429))
        #expect(statuses.filter { $0 == 429 }.count == 30 - accepted)
        // What was refused changed nothing.
        let units = try client.all("/units", "units").count
        #expect(units == accepted + 1)
        #expect(try client.request("PUT", "/units/calm", json: #"{"name":"C","status":"healthy"}"#, headers: Tokens.bearer(other)).status == 201)
    }

    @Test func anOpenServerLimitsWritesPerAddress() throws {
        let server = try TestHerald { $0.writesPerSecond = 3 }
        defer { server.stop() }
        let client = server.client()
        let start = ContinuousClock.now
        let statuses = try (0..<20).map { _ in try client.put("/currency", #"{"default":"euro"}"#).status }
        #expect(statuses.contains(429))
        #expect(statuses.prefix(6).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.filter { $0 == 200 }.count <= Self.allowed(burst: 6, rate: 3, since: start), "\(statuses)")
    }

    @Test func newConnectionsPastAnAddressesRateAreClosedUnanswered() throws {
        let server = try TestHerald { $0.http.connectionsPerSecond = 5 }
        defer { server.stop() }
        var answered = 0, closed = 0
        let start = ContinuousClock.now
        for _ in 0..<30 {
            let client = HTTPClient(port: server.port)
            if (try? client.get("/health").status) == 200 { answered += 1 } else { closed += 1 }
        }
        #expect(answered >= 10 && answered <= Self.allowed(burst: 10, rate: 5, since: start), "answered \(answered), closed \(closed)")
        #expect(closed > 0)
        // Later the bucket has room again.
        #expect(eventually(timeout: 30) { (try? HTTPClient(port: server.port).get("/health").status) == 200 })
    }

    /// The most a bucket of `burst` refilled at `rate` a second can have let through since `start`.
    static func allowed(burst: Int, rate: Int, since start: ContinuousClock.Instant) -> Int {
        let seconds = start.duration(to: .now) / .seconds(1)
        return burst + Int((seconds * Double(rate)).rounded(.up))
    }

    @Test func largeHeadsAndTargetsGetProblemDocuments() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let big = try server.client().get("/health", headers: [("X-Filler", String(repeating: "a", count: 9000))])
        #expect(big.status == 431)
        #expect(big.header("Content-Type") == "application/problem+json")
        let long = try server.client().get("/health?" + String(repeating: "q", count: 9000))
        #expect(long.status == 414)
        #expect(long.header("Content-Type") == "application/problem+json")
        #expect(try server.client().get("/health", headers: [("X-Filler", String(repeating: "a", count: 4000))]).status == 200)
    }

    @Test func behindATrustedProxyTheForwardedClientIsCounted() throws {
        let server = try TestHerald(examples: true) {
            $0.http.streamsPerClient = 2
            $0.http.trustedProxies = [AddressRange("127.0.0.1")].compactMap { $0 }
        }
        defer { server.stop() }
        let forA = [("X-Forwarded-For", "203.0.113.9, 10.0.0.1")]
        let a1 = try server.stream("/currency/events", headers: forA)
        let a2 = try server.stream("/currency/events", headers: [("X-Forwarded-For", "10.0.0.1")])
        #expect(try server.client().get("/currency/events", headers: forA).status == 429)
        // Another client behind the same proxy has its own share.
        let b = try server.stream("/currency/events", headers: [("X-Forwarded-For", "10.0.0.2")])
        #expect(try b.next().event == "snapshot")
        _ = (a1, a2)
    }

    @Test func anUntrustedPeersForwardedForIsIgnored() throws {
        let server = try TestHerald(examples: true) { $0.http.streamsPerClient = 2 }
        defer { server.stop() }
        let s1 = try server.stream("/currency/events", headers: [("X-Forwarded-For", "10.0.0.1")])
        let s2 = try server.stream("/currency/events", headers: [("X-Forwarded-For", "10.0.0.2")])
        #expect(try server.client().get("/currency/events", headers: [("X-Forwarded-For", "10.0.0.3")]).status == 429)
        _ = (s1, s2)
    }

    @Test func forwardedForIsReadRightToLeftPastTrustedProxies() throws {
        let resolver = ClientResolver(trustedProxies: ["10.0.0.0/8", "::1"].compactMap { AddressRange($0) })
        #expect(resolver.client(peer: "10.1.2.3", forwardedFor: ["198.51.100.7"]) == "198.51.100.7")
        // A client that writes its own X-Forwarded-For cannot choose its address: the proxy appends the real one.
        #expect(resolver.client(peer: "10.1.2.3", forwardedFor: ["1.1.1.1, 198.51.100.7"]) == "198.51.100.7")
        #expect(resolver.client(peer: "10.1.2.3", forwardedFor: ["198.51.100.7", "10.9.9.9"]) == "198.51.100.7")
        #expect(resolver.client(peer: "::1", forwardedFor: ["2001:db8::5"]) == "2001:db8::5")
        #expect(resolver.client(peer: "192.0.2.1", forwardedFor: ["198.51.100.7"]) == "192.0.2.1")
        #expect(resolver.client(peer: "10.1.2.3", forwardedFor: ["garbage"]) == "10.1.2.3")
        #expect(resolver.client(peer: "10.1.2.3", forwardedFor: []) == "10.1.2.3")
    }

    @Test func addressRangesMatchByPrefix() throws {
        let range = try #require(AddressRange("192.168.0.0/16"))
        #expect(range.contains("192.168.200.1"))
        #expect(!range.contains("192.169.0.1"))
        #expect(AddressRange("0.0.0.0/0")?.contains("8.8.8.8") == true)
        #expect(AddressRange("2001:db8::/32")?.contains("2001:db8:ffff::1") == true)
        #expect(AddressRange("2001:db8::/32")?.contains("2001:db9::1") == false)
        #expect(AddressRange("10.0.0.0/33") == nil)
        #expect(AddressRange("10.0.0/8") == nil)
        #expect(AddressRange("example.org") == nil)
        #expect(AddressRange("10.0.0.1")?.contains("10.0.0.2") == false)
    }

    @Test func aRateLimiterRefillsAtItsRateUpToItsBurst() {
        let limiter = RateLimiter(rate: 2, burst: 4)
        let start = ContinuousClock.now
        #expect((0..<4).allSatisfy { _ in limiter.take("a", at: start) == nil })
        let wait = limiter.take("a", at: start)
        #expect(wait.map { $0 <= .milliseconds(500) } == true)
        #expect(limiter.take("b", at: start) == nil)
        #expect(limiter.take("a", at: start + .milliseconds(600)) == nil)
        #expect(limiter.take("a", at: start + .milliseconds(600)) != nil)
        // Ten seconds later the bucket is full again, and no fuller than the burst.
        #expect((0..<4).allSatisfy { _ in limiter.take("a", at: start + .seconds(10)) == nil })
        #expect(limiter.take("a", at: start + .seconds(10)) != nil)
    }
}

/// Connections one address may hold, and room for everyone else when descriptors run short (issue 24,
/// item 5). Each test runs `herald` under a small open-file limit, as a container's 1,024 would be,
/// and speaks from several loopback addresses: to the server, 127.0.0.2 is another client.
@Suite struct ConnectionShareTests {
    /// Connects from `source`, asks for `/health/live` and reads the whole answer, keeping the
    /// connection open. nil: closed without an answer.
    static func keptAlive(_ port: Int, from source: String = "127.0.0.1") throws -> Socket? {
        let socket = try Socket(port: port, timeout: 30, source: source)
        try socket.send("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var parser = HTTPResponseParser()
        while !parser.complete {
            guard let bytes = try? socket.receive(), !bytes.isEmpty else { return nil }
            try parser.feed(bytes)
        }
        return parser.head?.status == 200 ? socket : nil
    }

    /// Whether the server has closed `socket`: its end (or a reset) is there to read, without waiting.
    static func isClosed(_ socket: Socket) -> Bool {
        var byte: UInt8 = 0
        let count = recv(socket.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    @Test func oneAddressAtItsMaximumLeavesOthersAbleToBidStreamAndProbe() throws {
        let herald = try HeraldProcess(arguments: ["--connections-per-address", "40", "--connections-per-second", "0"],
                                       openFileLimit: 256)
        let other = HTTPClient(port: herald.port, source: "127.0.0.2")
        let created = try other.post("/auctions", #"{"item":"lamp","countdownSeconds":60,"startingPrice":0}"#)
        let id = try #require(created.json["id"] as? String)
        other.close()
        // 127.0.0.1 takes its 40: 5 streams and 35 kept-alive connections.
        var held: [Any] = []
        for _ in 0..<5 {
            let stream = try SSEClient(port: herald.port, path: "/currency/events")
            try stream.awaitHead()
            held.append(stream)
        }
        for index in 0..<35 {
            let socket = try #require(try Self.keptAlive(herald.port), "connection \(index) of 35")
            held.append(socket)
        }
        // The 41st is closed at accept, unanswered, a stream as well as a request.
        #expect(try Self.keptAlive(herald.port) == nil)
        #expect(throws: (any Error).self) { try SSEClient(port: herald.port, path: "/currency/events").awaitHead(timeout: 30) }
        // Another address bids, streams and probes.
        let bidder = HTTPClient(port: herald.port, source: "127.0.0.2")
        #expect(try bidder.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        let watcher = try SSEClient(port: herald.port, path: "/auctions/\(id)/events", source: "127.0.0.2")
        #expect(try watcher.next().event == "snapshot")
        let probe = HTTPClient(port: herald.port, source: "127.0.0.3")
        #expect(try probe.get("/health/live").status == 200)
        #expect(try probe.get("/health/ready").status == 200)
        // A connection given back is room again for its address.
        held.removeLast(10)
        #expect(eventually(timeout: 30) { (try? Self.keptAlive(herald.port)) != nil })
    }

    /// Six addresses each trickle bodies on their 40 connections (240, more than the 192 connections
    /// 256 descriptors allow), a byte at a time, so that none is ever idle: the tricklers of the
    /// addresses holding the most are closed to make room, and a probe from a seventh address is
    /// answered while their bodies are still due (in 60 s: `--request-timeout`).
    @Test func tricklingBodiesFromManyAddressesLeaveRoomForAProbe() throws {
        let herald = try HeraldProcess(arguments: ["--connections-per-address", "40", "--connections-per-second", "0",
                                                   "--request-timeout", "60", "--writes-per-second", "0"], openFileLimit: 256)
        let head = "POST /notifications/drip HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50000\r\n\r\n{"
        var tricklers: [Socket] = []
        for address in 2...7 {
            for _ in 0..<40 {
                let socket = try Socket(port: herald.port, timeout: 5, source: "127.0.0.\(address)")
                try? socket.send(head)
                tricklers.append(socket)
            }
        }
        let started = Date()
        var answered = false
        // A byte on each every half second; between rounds, a probe from another address.
        while !answered, Date().timeIntervalSince(started) < 20 {
            for socket in tricklers { try? socket.send(" ") }
            let probe = try Socket(port: herald.port, timeout: 2, source: "127.0.0.9")
            try? probe.send("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answered = (try? probe.receive()).map { String(decoding: $0, as: UTF8.self).hasPrefix("HTTP/1.1 200") } ?? false
            Thread.sleep(forTimeInterval: 0.5)
        }
        #expect(answered, "a probe was answered while 240 bodies trickled")
        let open = tricklers.filter { !Self.isClosed($0) }.count
        #expect(open < 240, "tricklers were closed to make room: \(open) open")
    }

    @Test func theLongestIdleConnectionsMakeRoomWhenDescriptorsRunShort() throws {
        // 256 files: libmicrohttpd holds at most 192 connections, and idle ones are closed from 160 on.
        let herald = try HeraldProcess(arguments: ["--connections-per-address", "0", "--connections-per-second", "0"],
                                       openFileLimit: 256)
        var sockets: [Socket] = []
        for index in 0..<300 {
            // Without room made, the 193rd would wait in the accept queue for the first idle timeout (60 s).
            let socket = try #require(try Self.keptAlive(herald.port), "connection \(index) of 300 was not answered")
            sockets.append(socket)
        }
        #expect(eventually(timeout: 30) { Self.isClosed(sockets[0]) }, "the longest idle connection was closed")
        #expect(!Self.isClosed(sockets[299]), "the newest connection is still open")
        let open = sockets.filter { !Self.isClosed($0) }.count
        #expect(open <= 192, "\(open) connections still open")
        let probe = HTTPClient(port: herald.port, source: "127.0.0.2")
        #expect(try probe.get("/health/live").status == 200)
        #expect(try probe.get("/health/ready").status == 200)
    }
}
