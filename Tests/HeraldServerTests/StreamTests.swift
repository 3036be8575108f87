import Foundation
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

@Suite struct StreamTests {
    @Test func aStreamOpensAtOnceWithHeadersRetryAndASnapshot() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let id = try server.auction()
        let stream = try server.stream("/auctions/\(id)/events")
        let head = try #require(stream.head)
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(head.header("Cache-Control") == "no-store")
        #expect(head.header("X-Accel-Buffering") == "no")
        let snapshot = try stream.next()
        #expect(stream.retry == 3000)
        #expect(stream.comments.first?.isEmpty == false, "a comment line comes first")
        #expect(snapshot.event == "snapshot")
        #expect(snapshot.json["topic"] as? String == "auctions/\(id)")
        #expect((snapshot.json["auction"] as? [String: Any])?["id"] as? String == id)
        #expect(snapshot.id?.allSatisfy(\.isNumber) == true)
    }

    @Test func liveEventsReachEveryObserverInOrder() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let id = try server.auction()
        let streams = try (0..<3).map { _ in try server.stream("/auctions/\(id)/events?snapshot=false") }
        let client = server.client()
        for amount in 1...5 { _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"b\#(amount)","amount":\#(amount)}"#) }
        for stream in streams {
            let bids = try stream.next(5).filter { $0.event == "bid" }
            #expect(bids.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int } == [1, 2, 3, 4, 5])
            let ids = bids.compactMap { $0.id.flatMap(UInt64.init) }
            #expect(ids == ids.sorted() && Set(ids).count == 5)
        }
    }

    @Test func theCountdownTicksAndClosesOverTheStream() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock)
        defer { server.stop() }
        let id = try server.auction(countdown: 3)
        let stream = try server.stream("/auctions/\(id)/events?snapshot=false")
        _ = try server.client().post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":10}"#)
        #expect(try stream.next().event == "bid")
        clock.advance(by: 1)
        clock.advance(by: 1)
        clock.advance(by: 1)
        let events = try stream.next(3)
        #expect(events.map(\.event) == ["tick", "tick", "closed"])
        #expect(events.prefix(2).compactMap { $0.json["remainingSeconds"] as? Int } == [2, 1])
        #expect(events[2].json["winner"] as? String == "ann")
    }

    @Test func lastEventIdReplaysExactlyWhatWasMissed() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let first = try server.stream("/auctions/\(id)/events")
        _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"a","amount":1}"#)
        _ = try first.next()
        let seen = try first.next()
        #expect(seen.event == "bid")
        first.close()
        for amount in 2...4 { _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"a","amount":\#(amount)}"#) }
        _ = try client.put("/currency", #"{"default":"euro"}"#)

        let lastId = try #require(seen.id)
        for headers in [[("Last-Event-ID", lastId)]] {
            let again = try server.stream("/auctions/\(id)/events", headers: headers)
            let replay = try again.next(named: "bid"), more = try again.next(2)
            #expect(([replay] + more).compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int } == [2, 3, 4])
            // No duplicates, no other subjects: the next event is a bid made after the replay.
            _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"marker","amount":5}"#)
            let following = try again.next()
            #expect((following.json["bid"] as? [String: Any])?["bidder"] as? String == "marker", "\(following.event ?? ""): \(following.data)")
        }
        let byQuery = try server.stream("/auctions/\(id)/events?lastEventId=\(lastId)")
        #expect(try byQuery.next(3).map(\.event) == ["bid", "bid", "bid"])
    }

    /// A replay of many missed bids (about 45 KB: more than one piece of a packed replay) reaches each
    /// client that resumes from the same id whole, in order and once, then live events, and so does one
    /// stream of two subjects (the bids and the currency's changes between them, in the order made); the
    /// delivered count counts every replayed event, not the pieces they came in.
    @Test func aLongReplayComesWholeToEveryClientThatResumesFromTheSameId() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let before = try #require(try client.get("/auctions/\(id)").header("Herald-Event-ID"))
        var both: [String] = []
        for amount in 1...120 {
            #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"a","amount":\#(amount)}"#).status == 201)
            both.append("bid \(amount)")
            if amount.isMultiple(of: 40) {
                let currency = ["euro", "dollar", "euro"][amount / 40 - 1]
                #expect(try client.put("/currency", #"{"default":"\#(currency)"}"#).status == 200)
                both.append("currency \(currency)")
            }
        }
        let streams = try (0..<2).map { _ in try server.stream("/auctions/\(id)/events", headers: [("Last-Event-ID", before)]) }
        for stream in streams {
            let replay = try stream.next(120)
            #expect(replay.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int } == Array(1...120))
        }
        let many = try server.stream("/events?topic=auctions/\(id)&topic=currency", headers: [("Last-Event-ID", before)])
        let replay = try many.next(123).map { event in
            event.event == "currency" ? "currency \(event.json["default"] as? String ?? "")"
                : "bid \((event.json["bid"] as? [String: Any])?["amount"] as? Int ?? 0)"
        }
        #expect(replay == both)
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"marker","amount":121}"#).status == 201)
        for stream in streams + [many] {
            #expect((try stream.next(named: "bid").json["bid"] as? [String: Any])?["bidder"] as? String == "marker")
        }
        let delivered = try client.get("/metrics").text.split(separator: "\n").first { $0.hasPrefix("herald_events_delivered_total ") }
        #expect(delivered == "herald_events_delivered_total 366", "two replays of 120 bids, one of 123 events, and the marker thrice")
    }

    @Test func anIdTooOldOrUnreadableGetsResyncThenSnapshot() throws {
        let server = try TestHerald(history: 3)
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        for amount in 1...6 { _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"a","amount":\#(amount)}"#) }
        for lastId in ["1", "not-a-number"] {
            let stream = try server.stream("/auctions/\(id)/events", headers: [("Last-Event-ID", lastId)])
            let events = try stream.next(2)
            #expect(events.map(\.event) == ["resync", "snapshot"], "\(lastId)")
            #expect((events[1].json["auction"] as? [String: Any])?["price"] as? Int == 6)
        }
    }

    @Test func oneConnectionObservesManySubjects() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let stream = try server.stream("/events?topic=auctions/\(id)&topic=currency")
        #expect(Set(try stream.next(2).compactMap { $0.json["topic"] as? String }) == ["auctions/\(id)", "currency"])
        _ = try client.put("/currency", #"{"default":"gramGold"}"#)
        _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"a","amount":1}"#)
        #expect(try stream.next(2).map(\.event) == ["currency", "bid"])
        #expect(try client.get("/events").status == 400)
        let unknown = try client.get("/events?topic=auctions/999")
        #expect(unknown.status == 404)
        #expect(unknown.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/events?topic=bogus").status == 400)
        for malformed in ["currency/", "/currency", "units/", "notifications/..", "auctions/", "", "units/a/b"] {
            let answer = try client.get("/events?topic=\(malformed)")
            #expect(answer.status == 400, "topic=\(malformed)")
        }
        // Named twice, observed once: one snapshot.
        let twice = try server.stream("/events?topic=currency&topic=currency")
        #expect(try twice.next().event == "snapshot")
        _ = try server.client().put("/currency", #"{"default":"euro"}"#)
        #expect(try twice.next().event == "currency", "no second snapshot before the live event")
    }

    @Test func unknownSubjectsAre404ProblemsNotStreams() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        // A unit not made yet may be observed (AbsentUnitTests).
        for path in ["/auctions/9/events", "/trips/9/events"] {
            let response = try client.get(path)
            #expect(response.status == 404, "\(path)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
    }

    @Test func anObserverIsGoneSoonAfterItsClientLeavesWhileIdle() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let id = try server.auction()
        let stream = try server.stream("/auctions/\(id)/events")
        _ = try stream.next()
        #expect(try server.observers(of: "auctions/\(id)") == 1)
        stream.close()
        // Dropped when its socket reports the close; the wait is generous, for a loaded machine.
        #expect(try eventually(timeout: 30) { try server.observers(of: "auctions/\(id)") == 0 })
        #expect(try server.client().get("/health").json["observers"] as? Int == 0)
    }

    /// The engine follows a clock the test moves: the first round (15 s) finds the stream wrote its
    /// snapshot since it opened, so the first heartbeat is the second round's (30 s), not a moment
    /// before it, and one comes each round after; nothing waits for real time to pass.
    @Test func idleStreamsGetHeartbeats() throws {
        let clock = ManualClock(now: Date())
        let server = try TestHerald(clock: clock, heartbeat: .seconds(15)) { $0.http.streamClock = clock }
        defer { server.stop() }
        let stream = try server.stream("/currency/events")
        _ = try stream.next()
        let before = stream.comments.count
        clock.advance(by: 29)
        #expect(!stream.awaitComments(before + 1, timeout: 1.5), "no heartbeat before its round")
        clock.advance(by: 1)
        #expect(stream.awaitComments(before + 1, timeout: 30), "a heartbeat at 30 s")
        clock.advance(by: 15)
        #expect(stream.awaitComments(before + 2, timeout: 30), "and another at 45 s")
        #expect(stream.comments.last == "heartbeat")
        // Heartbeats go straight to the socket as whole chunks: the framing must still hold.
        _ = try server.client().put("/currency", #"{"default":"euro"}"#)
        let event = try stream.next()
        #expect(event.event == "currency" && event.json["default"] as? String == "euro")
        #expect(!stream.ended)
    }

    @Test func aStalledReaderIsCutOffAndOthersCarryOn() throws {
        let server = try TestHerald(queueLimit: 8)
        defer { server.stop() }
        let client = server.client()
        let stalled = try SSEClient(port: server.port, path: "/notifications/big/events", receiveBuffer: 4096)
        try stalled.awaitHead()
        let reader = try server.stream("/notifications/big/events")
        let payload = String(repeating: "x", count: 60_000)
        for _ in 0..<200 {
            #expect(try client.post("/notifications/big", #"{"userInfo":{"pad":"\#(payload)"}}"#).status == 202)
            _ = try reader.next(timeout: 5)
        }
        #expect(try eventually(timeout: 30) { try server.observers(of: "notifications/big") == 1 }, "the stalled observer was dropped")
        #expect(stalled.awaitEnd(timeout: 30), "its connection was closed; it can resume with Last-Event-ID")
    }
}

@Suite struct HalfCloseTests {
    @Test func aClientThatHalfClosesKeepsItsStreamAndOneThatLeavesIsDropped() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let halfClosed = try Socket(port: server.port)
        try halfClosed.send("GET /currency/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        shutdown(halfClosed.fd, Int32(SHUT_WR))
        #expect(eventually(timeout: 30) { (try? server.observers(of: "currency")) == 1 })
        let leaving = try server.stream("/currency/events")
        #expect(eventually(timeout: 30) { (try? server.observers(of: "currency")) == 2 })
        leaving.close()
        #expect(eventually(timeout: 30) { (try? server.observers(of: "currency")) == 1 }, "a closed socket is dropped")
        _ = try server.client().put("/currency", #"{"default":"euro"}"#)
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !String(decoding: received, as: UTF8.self).contains("event: currency") {
            guard let bytes = try? halfClosed.receive(), !bytes.isEmpty else { break }
            received += bytes
        }
        #expect(String(decoding: received, as: UTF8.self).contains("event: currency"), "the half-closed client still gets events")
    }
}

@Suite struct LocalizedStreamTests {
    @Test func tripStreamsSpeakTheLocaleTheyAskFor() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let german = try server.stream("/trips/1/events?locale=de_DE")
        let snapshot = try german.next()
        #expect(((snapshot.json["trip"] as? [String: Any])?["display"] as? [String: Any])?["delay"] as? String == "5 Minuten Verspätung")
        let turkish = try server.stream("/events?topic=trips/1&topic=currency", headers: [("Accept-Language", "tr-TR")])
        _ = try turkish.next(2)
        let english = try server.stream("/trips/1/events")
        _ = try english.next()
        // The lobby: its snapshot's trips and each trip's change, in German too.
        let lobby = try server.stream("/trips/events?locale=de_DE")
        let trips = try lobby.next(named: "snapshot").json["trips"] as? [[String: Any]]
        #expect((trips?.first?["display"] as? [String: Any])?["delay"] as? String == "5 Minuten Verspätung")
        _ = try server.client().post("/trips/1/delay", #"{"deltaSeconds":300}"#)
        func delay(_ event: SSEEvent) -> String? {
            ((event.json["trip"] as? [String: Any])?["display"] as? [String: Any])?["delay"] as? String
        }
        #expect(delay(try german.next(named: "trip")) == "10 Minuten Verspätung")
        #expect(delay(try turkish.next(named: "trip")) == "10 dakika rötar")
        #expect(delay(try english.next(named: "trip")) == "10 minutes delay")
        #expect(delay(try lobby.next(named: "trip")) == "10 Minuten Verspätung")
    }
}
