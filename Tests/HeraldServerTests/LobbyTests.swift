import Foundation
import HeraldTestSupport
import HeraldThreads
import Testing

/// A client's copy of filtered collections, built only from what its stream sends: snapshots, the
/// members' states (`auction`, `trip`, `unit`) and `left`.
struct LobbyCopy {
    /// Collection → member id → the member as last sent.
    var members: [String: [String: [String: Any]]] = [:]
    /// Collections whose snapshot is arriving in several events (`more: true`).
    var filling: Set<String> = []
    var lastId: String?

    static let itemNames = ["auction": "auctions", "trip": "trips", "unit": "units"]

    mutating func apply(_ event: SSEEvent) {
        if let id = event.id { lastId = id }
        let json = event.json
        switch event.event ?? "message" {
        case "snapshot":
            guard let topic = json["topic"] as? String, let name = Self.collection(topic) else { return }
            if !filling.contains(name) { members[name] = [:] }
            for member in json[name] as? [[String: Any]] ?? [] { if let id = member["id"] as? String { members[name, default: [:]][id] = member } }
            if json["more"] as? Bool == true { filling.insert(name) } else { filling.remove(name) }
        case "left":
            guard let topic = json["topic"] as? String, let name = Self.collection(topic), let id = json["id"] as? String else { return }
            members[name, default: [:]][id] = nil
        case let item where Self.itemNames[item] != nil:
            guard let name = Self.itemNames[item], let member = json[item] as? [String: Any], let id = member["id"] as? String else { return }
            members[name, default: [:]][id] = member
        default: break
        }
    }

    /// `auctions` for `auctions` and `auctions/7`.
    static func collection(_ topic: String) -> String? {
        let first = String(topic.split(separator: "/").first ?? "")
        return ["auctions", "trips", "units"].contains(first) ? first : nil
    }
}

/// What two views of a member must agree on (not `remainingSeconds`, which a list reads at its own time).
func essence(_ collection: String, _ member: [String: Any]) -> String {
    let fields = switch collection {
    case "auctions": ["id", "status", "price", "leader", "bidCount", "winner"]
    case "trips": ["id", "actualDeparture", "delaySeconds", "delayed"]
    default: ["id", "name", "status"]
    }
    return fields.map { "\($0)=\(member[$0].map { "\($0)" } ?? "nil")" }.joined(separator: " ")
}

@Suite struct LobbyTests {
    /// Two clients, each watching the three collections through complementary filters, and a
    /// notification topic whose event tells a client it has read up to a point.
    static let views: [(path: String, lists: [(collection: String, query: String)])] = [
        ("/events?topic=auctions;status=open&topic=trips;delayed=true&topic=units;status=wounded,dead&topic=notifications/sync",
         [("auctions", "status=open"), ("trips", "delayed=true"), ("units", "status=wounded,dead")]),
        ("/events?topic=auctions;status=closed&topic=trips;delayed=false&topic=units;status=healthy&topic=notifications/sync",
         [("auctions", "status=closed"), ("trips", "delayed=false"), ("units", "status=healthy")]),
        ("/events?topic=auctions&topic=trips&topic=units&topic=notifications/sync",
         [("auctions", ""), ("trips", ""), ("units", "")]),
    ]

    /// The exactness rule: whatever the interleaving of creates, bids, closes, trip moves, unit puts
    /// and removes, and wherever the clients drop and resume (with `Last-Event-ID`), the set each builds
    /// from its snapshot and events equals the list endpoint's, same filter, read at the last id it saw.
    @Test func aClientsCopyOfAFilteredCollectionEqualsTheListAfterAnySchedule() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock)
        defer { server.stop() }
        let client = server.client()
        let schedules = Int(ProcessInfo.processInfo.environment["HERALD_LOBBY_SCHEDULES"] ?? "") ?? 200
        var random = Fuzzing.Generator(state: Fuzzing.seed ^ 0x10BB)
        var copies = Self.views.map { _ in LobbyCopy() }
        var streams: [SSEClient?] = try Self.views.map { try server.stream($0.path) }
        var auctions: [String] = [], trips: [String] = [], units: Set<String> = []
        for schedule in 0..<schedules {
            for _ in 0..<Int.random(in: 3...12, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0:
                    let countdown = Int.random(in: 1...3, using: &random)
                    let made = try client.post("/auctions", #"{"item":"lot","countdownSeconds":\#(countdown)}"#)
                    if let id = made.json["id"] as? String { auctions.append(id) }
                case 1, 2:
                    guard let id = auctions.randomElement(using: &random) else { continue }
                    let price = (try client.get("/auctions/\(id)").json["price"] as? Int) ?? 0
                    _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"b\#(Int.random(in: 1...3, using: &random))","amount":\#(price + 1)}"#)
                case 3:
                    clock.advance(by: Double(Int.random(in: 1...3, using: &random)))  // countdowns run out: closes
                case 4:
                    let made = try client.post("/trips", #"{"departure":"2026-01-01T10:00:00Z","arrival":"2026-01-01T11:00:00Z"}"#)
                    if let id = made.json["id"] as? String { trips.append(id) }
                case 5, 6:
                    guard let id = trips.randomElement(using: &random) else { continue }
                    let delta = [-600, -120, 0, 120, 600].randomElement(using: &random) ?? 0
                    _ = try client.post("/trips/\(id)/delay", #"{"deltaSeconds":\#(delta)}"#)
                case 7, 8:
                    let id = "u\(Int.random(in: 0..<12, using: &random))"
                    let status = ["healthy", "wounded", "dead"].randomElement(using: &random) ?? "healthy"
                    if try client.put("/units/\(id)", #"{"name":"\#(id)","status":"\#(status)"}"#).status < 300 { units.insert(id) }
                default:
                    guard let id = units.randomElement(using: &random) else { continue }
                    _ = try client.request("DELETE", "/units/\(id)")
                    units.remove(id)
                }
                // A client drops; another that was away comes back from where it was.
                for index in streams.indices where Int.random(in: 0..<8, using: &random) == 0 {
                    if let stream = streams[index] {
                        // What already arrived is applied; the rest comes in the replay.
                        while let event = try? stream.next(timeout: 0.001) { copies[index].apply(event) }
                        stream.close()
                        streams[index] = nil
                    } else {
                        let resume = copies[index].lastId.map { [("Last-Event-ID", $0)] } ?? []
                        streams[index] = try server.stream(Self.views[index].path, headers: resume)
                    }
                }
            }
            // Every client back, reading up to a mark published after the schedule.
            let mark = try #require(try client.post("/notifications/sync", #"{"schedule":\#(schedule)}"#).json["id"] as? String)
            for index in streams.indices {
                if streams[index] == nil {
                    let resume = copies[index].lastId.map { [("Last-Event-ID", $0)] } ?? []
                    streams[index] = try server.stream(Self.views[index].path, headers: resume)
                }
                guard let stream = streams[index] else { continue }
                while true {
                    let event = try stream.next()
                    copies[index].apply(event)
                    if event.id == mark, event.event == "notification" { break }
                }
                for (collection, query) in Self.views[index].lists {
                    let listed = try client.all("/\(collection)?\(query)", collection)
                    let expected = listed.map { essence(collection, $0) }
                    let built = (copies[index].members[collection] ?? [:]).values.map { essence(collection, $0) }.sorted()
                    #expect(built == expected.sorted(), "schedule \(schedule), \(collection)?\(query), read at \(mark)")
                    if built != expected.sorted() { return }
                }
            }
        }
    }

    @Test func aLobbyThatWasAwayGetsTheEntersChangesAndLeavesItMissed() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock)
        defer { server.stop() }
        let client = server.client()
        let staying = try server.auction(countdown: 60), leaving = try server.auction(countdown: 5)
        _ = try client.post("/auctions/\(leaving)/bids", #"{"bidder":"ann","amount":3}"#)
        let lobby = try server.stream("/auctions/events?status=open")
        let snapshot = try lobby.next()
        #expect(snapshot.event == "snapshot")
        #expect((snapshot.json["auctions"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [staying, leaving])
        lobby.close()

        let entering = try server.auction(countdown: 60)
        _ = try client.post("/auctions/\(staying)/bids", #"{"bidder":"bob","amount":9}"#)
        clock.advance(by: 6)  // `leaving`'s countdown runs out
        #expect(eventually { (try? client.get("/auctions/\(leaving)").json["status"] as? String) == "closed" })

        let back = try server.stream("/auctions/events?status=open", headers: [("Last-Event-ID", try #require(snapshot.id))])
        let missed = try back.next(3)
        #expect(missed.map { "\($0.event ?? "") \(($0.json["auction"] as? [String: Any])?["id"] as? String ?? $0.json["id"] as? String ?? "")" }
                == ["auction \(entering)", "auction \(staying)", "left \(leaving)"])
        #expect((missed[1].json["auction"] as? [String: Any])?["price"] as? Int == 9)
        #expect(missed[2].json["topic"] as? String == "auctions/\(leaving)")
        let closedLobby = try server.stream("/auctions/events?status=closed", headers: [("Last-Event-ID", try #require(snapshot.id))])
        #expect(try closedLobby.next().json["topic"] as? String == "auctions/\(leaving)", "the closed lobby sees it enter")
    }

    @Test func changesAnswerWithTheEventsTheStreamSends() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let path = "topic=auctions;status=open&topic=units;status=dead&topic=currency"
        let stream = try server.stream("/events?" + path)
        let snapshots = try stream.next(3)
        #expect(snapshots.map(\.event) == ["snapshot", "snapshot", "snapshot"])
        let start = try #require(snapshots.last?.id)
        let auction = try server.auction(countdown: 60)
        _ = try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":4}"#)
        _ = try client.put("/units/a", #"{"name":"A","status":"dead"}"#)
        _ = try client.put("/units/a", #"{"name":"A","status":"healthy"}"#)
        _ = try client.put("/units/b", #"{"name":"B","status":"healthy"}"#)
        _ = try client.put("/currency", #"{"default":"euro"}"#)
        let streamed = try stream.next(5)
        #expect(streamed.map { $0.event ?? "" } == ["auction", "auction", "unit", "left", "currency"])

        let answer = try client.get("/changes?\(path)&after=\(start)")
        #expect(answer.status == 200)
        #expect(answer.header("Content-Type") == "application/json")
        #expect(answer.header("Cache-Control") == "no-store")
        let events = try #require(answer.json["events"] as? [[String: Any]])
        let asSent = events.map { event -> SSEEvent in
            let data = (try? JSONSerialization.data(withJSONObject: event["data"] ?? NSNull(), options: [.sortedKeys])) ?? Data()
            return SSEEvent(id: event["id"] as? String, event: event["event"] as? String, data: String(decoding: data, as: UTF8.self))
        }
        let normalized = streamed.map { event -> SSEEvent in
            let data = (try? JSONSerialization.data(withJSONObject: event.json, options: [.sortedKeys])) ?? Data()
            return SSEEvent(id: event.id, event: event.event, data: String(decoding: data, as: UTF8.self))
        }
        #expect(asSent == normalized, "the same ids, names and data")
        #expect(answer.json["last"] as? String == streamed.last?.id)

        // Nothing newer: an empty list at once with wait=0, and the same `last`.
        let quiet = try client.get("/changes?\(path)&after=\(streamed.last?.id ?? "")")
        #expect((quiet.json["events"] as? [Any])?.isEmpty == true)
        #expect(quiet.json["last"] as? String == streamed.last?.id)
    }

    @Test func aHeldChangesRequestIsAnsweredByTheNextEventOrWhenItsWaitRunsOut() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let last = try #require(try client.get("/changes?topic=units").json["last"] as? String)
        let answer = Lock<TestResponse?>(nil)
        let port = server.port
        let waiting = Thread {
            let response = try? HTTPClient(port: port).get("/changes?topic=units&after=\(last)&wait=20")
            answer.withLock { $0 = response }
        }
        waiting.start()
        #expect(eventually { (try? client.get("/health").json["observers"] as? Int) == 1 }, "held, observing")
        _ = try client.put("/currency", #"{"default":"euro"}"#)  // another topic: still held
        #expect(answer.withLock { $0 } == nil)
        _ = try client.put("/units/held", #"{"name":"H","status":"wounded"}"#)
        #expect(eventually { answer.withLock { $0 } != nil })
        let held = try #require(answer.withLock { $0 })
        #expect(held.status == 200)
        #expect(held.header("Connection") == "close")
        let body = held.json
        let events = try #require(body["events"] as? [[String: Any]])
        #expect(events.map { $0["event"] as? String } == ["unit"])
        #expect(body["last"] as? String == events.first?["id"] as? String)

        let after = try #require(body["last"] as? String)
        let started = Date()
        let empty = try client.get("/changes?topic=units&after=\(after)&wait=1")
        #expect(Date().timeIntervalSince(started) >= 0.9, "held until its wait ran out")
        #expect((empty.json["events"] as? [Any])?.isEmpty == true)
        #expect(empty.json["last"] as? String == after)
        #expect(try client.get("/changes?topic=units&after=1&wait=31").status == 400)
        #expect(try client.get("/changes?topic=units&after=x").status == 400)
        // Ended by its wait, not by a token: counted as such.
        let metrics = try client.get("/metrics").text
        #expect(metrics.contains(#"herald_streams_closed_total{reason="wait ended"} 1"#), "\(metrics.split(separator: "\n").filter { $0.contains("closed_total") })")
        #expect(!metrics.contains(#"reason="token expired""#))
    }

    /// From no position, `/changes` answers the topics' snapshots, as a stream starts with them, and the
    /// id they reflect; the next request after it misses nothing. `snapshot=false`: only the id.
    @Test func changesFromNoPositionStartWithTheSnapshots() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let client = server.client()
        let first = try client.get("/changes?topic=currency&topic=auctions;status=open").json
        let events = try #require(first["events"] as? [[String: Any]])
        #expect(events.map { $0["event"] as? String } == ["snapshot", "snapshot"], "\(events)")
        #expect(events.compactMap { ($0["data"] as? [String: Any])?["topic"] as? String } == ["currency", "auctions"])
        let last = try #require(first["last"] as? String)
        #expect(events.allSatisfy { $0["id"] as? String == last })
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
        let next = try client.get("/changes?topic=currency&topic=auctions;status=open&after=\(last)").json
        #expect((next["events"] as? [[String: Any]])?.map { $0["event"] as? String } == ["currency"])
        let bare = try client.get("/changes?topic=currency&snapshot=false").json
        #expect((bare["events"] as? [Any])?.isEmpty == true && bare["last"] as? String != nil)
        #expect(try client.get("/changes?topic=currency&snapshot=maybe").status == 400)
    }

    @Test func aHeldChangesRequestWhoseClientHalfClosesIsAnsweredAtOnce() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let last = try #require(try server.client().get("/changes?topic=units").json["last"] as? String)
        // Held for 30 s unless the half-close answers it: a receive that waits 15 s throws first.
        let socket = try Socket(port: server.port, timeout: 15)
        try socket.send("GET /changes?topic=units&after=\(last)&wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(eventually { (try? server.client().get("/health").json["observers"] as? Int) == 1 }, "held")
        shutdown(socket.fd, Int32(SHUT_WR))
        var received: [UInt8] = []
        while true {
            let bytes = try socket.receive()
            if bytes.isEmpty { break }
            received += bytes
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "answered, not dropped")
        #expect(text.hasSuffix(#"{"events":[],"last":"\#(last)"}"#))
    }

    @Test func changesAfterAnIdOlderThanTheHistoryAre409() throws {
        let server = try TestHerald(history: 3)
        defer { server.stop() }
        let client = server.client()
        for index in 0..<6 { _ = try client.put("/units/u\(index)", #"{"name":"x","status":"healthy"}"#) }
        let stale = try client.get("/changes?topic=units&after=1")
        #expect(stale.status == 409)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect((stale.json["detail"] as? String)?.contains("read the state again") == true)
        #expect(try client.get("/changes?topic=units&after=4").status == 200)
    }

    @Test func aCollectionNeedsGrantsThatNameItOrCoverEveryMember() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        for (grants, status) in [(["auctions/7"], 403), (["auctions/*"], 200), (["auctions"], 200), (["*"], 200), (["units/*"], 403)] {
            let token = try await Tokens.make(subscribe: grants)
            let answer = try client.get("/changes?topic=auctions;status=open", headers: Tokens.bearer(token))
            #expect(answer.status == status, "\(grants)")
            let stream = try SSEClient(port: server.port, path: "/auctions/events", headers: Tokens.bearer(token))
            #expect(try stream.awaitHead().status == status, "\(grants) on the stream")
            stream.close()
        }
    }

    @Test func filtersThatNameNothingAre400() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        for path in ["/auctions/events?status=pending", "/trips/events?delayed=maybe", "/units/events?status=wounded,fine",
                     "/events?topic=auctions;colour=red", "/events?topic=currency;status=open", "/events?topic=units;status",
                     "/events?topic=auctions;status=open&topic=auctions;status=closed", "/changes?topic=trips;delayed=",
                     "/units?status=", "/units?status=dead,", "/trips?delayed=yes",
                     // A field the collection has not, in the query of its stream or list.
                     "/trips/events?status=open", "/units/events?colour=red", "/auctions/events?delayed=true", "/trips?status=open",
                     "/auctions?delayed=true", "/units?state=dead",
                     // /changes of a topic that sends no event with an id.
                     "/changes?topic=presence/currency&after=1"] {
            let answer = try client.get(path)
            #expect(answer.status == 400, "\(path)")
            #expect(answer.header("Content-Type") == "application/problem+json")
        }
    }
}
