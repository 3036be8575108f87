import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// `presence/T`: who watches T. The server's clock is one the test moves; presence looks at it once a
/// (real) second.
@Suite struct PresenceTests {
    func secured(_ clock: ManualClock, users: Int = 1000, configure: @escaping (inout HeraldConfiguration) -> Void = { _ in }) async throws -> TestHerald {
        let server = try await TestHerald.secured(clock: clock) { configuration in
            configuration.presenceGrace = 5
            configuration.presenceUsers = users
            configure(&configuration)
        }
        server.adminToken = try await Tokens.make(sub: "admin", expires: Date().addingTimeInterval(3600))
        return server
    }

    func watch(_ server: TestHerald, _ topic: String, as sub: String) async throws -> SSEClient {
        let token = try await Tokens.make(sub: sub, expires: Date().addingTimeInterval(3600))
        return try server.stream("/events?topic=\(topic)", headers: Tokens.bearer(token))
    }

    /// The next presence event (`joined`, `left`) or `watchers` of the given name, skipping the others.
    func next(_ stream: SSEClient, _ names: Set<String> = ["joined", "left"]) throws -> SSEEvent {
        while true {
            let event = try stream.next(timeout: 20)
            if names.contains(event.event ?? "") { return event }
        }
    }

    /// A token that may watch everything, for `GET /presence` (made once: signing is async).
    func users(_ server: TestHerald, _ topic: String) throws -> [String: Int] {
        let answer = try presence(server, topic)
        let users = answer["users"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: users.compactMap { user in
            (user["sub"] as? String).map { ($0, user["streams"] as? Int ?? -1) }
        })
    }

    func presence(_ server: TestHerald, _ topic: String) throws -> [String: Any] {
        try server.client().get("/presence?topic=\(topic)", headers: server.adminToken.map(Tokens.bearer) ?? []).json
    }

    /// Three tabs are one user with three streams: one `joined`; closing two is nothing; closing the
    /// third and opening one again within the grace is nothing; closing it for good is one `left`,
    /// after the grace.
    @Test func tabsAreOneUserAndAReloadWithinTheGraceIsNoLeave() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let lastId = try server.client().get("/health").json["lastEventId"] as? String
        let watcher = try await watch(server, "presence/currency", as: "admin")
        #expect(try watcher.next().event == "stream")
        let snapshot = try watcher.next()
        #expect(snapshot.event == "snapshot")
        #expect(snapshot.json["topic"] as? String == "presence/currency")
        #expect(snapshot.json["watchers"] as? Int == 0)
        #expect((snapshot.json["users"] as? [Any])?.isEmpty == true)

        var tabs = [try await watch(server, "currency", as: "ann")]
        let joined = try next(watcher)
        #expect(joined.event == "joined")
        #expect(joined.json["sub"] as? String == "ann")
        #expect(joined.json["topic"] as? String == "presence/currency")
        #expect(joined.id == nil, "presence events take no id")
        tabs.append(try await watch(server, "currency", as: "ann"))
        tabs.append(try await watch(server, "currency", as: "ann"))
        #expect(eventually { (try? users(server, "currency")) == ["ann": 3] })
        // The count, coalesced: a `watchers` of 3 comes (at most once a second).
        while (try next(watcher, ["watchers", "joined", "left"])).json["watchers"] as? Int != 3 {}
        tabs[0].close()
        tabs[1].close()
        #expect(eventually { (try? users(server, "currency")) == ["ann": 1] })
        // The last tab reloads: closed, then open again within the grace.
        tabs[2].close()
        #expect(eventually { (try? users(server, "currency")) == ["ann": 0] }, "in the grace: still listed, with 0 streams")
        clock.advance(by: 3)
        let reloaded = try await watch(server, "currency", as: "ann")
        #expect(eventually { (try? users(server, "currency")) == ["ann": 1] })
        clock.advance(by: 4)
        // Bob's arrival marks the point: what came before it for ann is nothing at all.
        let bob = try await watch(server, "currency", as: "bob")
        let marker = try next(watcher)
        #expect(marker.event == "joined" && marker.json["sub"] as? String == "bob", "no left and joined for ann's reload: \(marker)")
        reloaded.close()
        #expect(eventually { (try? users(server, "currency"))?["ann"] == 0 })
        clock.advance(by: 6)
        let left = try next(watcher)
        #expect(left.event == "left")
        #expect(left.json["sub"] as? String == "ann")
        #expect(try users(server, "currency") == ["bob": 1])
        bob.close()
        #expect(try server.client().get("/health").json["lastEventId"] as? String == lastId, "nothing of presence in the event log")
    }

    /// A client that vanishes (its socket reset) is dropped by the engine, then left after the grace.
    @Test func anAbruptDisconnectIsALeave() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let watcher = try await watch(server, "presence/auctions/1", as: "admin")
        _ = try watcher.next(named: "snapshot")
        let ann = try await watch(server, "auctions/1", as: "ann")
        #expect(try next(watcher).json["sub"] as? String == "ann")
        ann.reset()
        #expect(eventually(timeout: 20) { (try? users(server, "auctions/1")) == ["ann": 0] }, "the engine saw the reset")
        clock.advance(by: 6)
        let left = try next(watcher)
        #expect(left.event == "left" && left.json["sub"] as? String == "ann")
    }

    /// Past `--presence-users`, a topic shows counts only.
    @Test func manyUsersAreCountsOnly() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock, users: 2)
        defer { server.stop() }
        var streams: [SSEClient] = []
        for user in ["ann", "bob"] { streams.append(try await watch(server, "currency", as: user)) }
        #expect(eventually { (try? users(server, "currency")) == ["ann": 1, "bob": 1] })
        streams.append(try await watch(server, "currency", as: "cat"))
        #expect(eventually { (try? presence(server, "currency"))?["truncated"] as? Bool == true })
        let answer = try presence(server, "currency")
        #expect(answer["users"] == nil)
        #expect(answer["watchers"] as? Int == 3)
        let watcher = try await watch(server, "presence/currency", as: "admin")
        let snapshot = try watcher.next(named: "snapshot")
        #expect(snapshot.json["truncated"] as? Bool == true)
        #expect(snapshot.json["users"] == nil)
    }

    @Test func watchingPresenceNeedsAGrantThatCoversIt() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let narrow = try await Tokens.make(sub: "ann", subscribe: ["auctions/*"])
        #expect(try server.client().get("/events?topic=presence/auctions/1", headers: Tokens.bearer(narrow)).status == 403)
        #expect(try server.client().get("/presence?topic=auctions/1", headers: Tokens.bearer(narrow)).status == 403)
        #expect(try server.client().get("/presence?topic=auctions/1").status == 401)
        let wide = try await Tokens.make(sub: "ann", subscribe: ["presence/*"])
        #expect(try server.client().get("/presence?topic=auctions/1", headers: Tokens.bearer(wide)).status == 200)
        #expect(try server.client().get("/presence?topic=auctions/999", headers: Tokens.bearer(wide)).status == 404)
        #expect(try server.client().get("/presence?topic=presence/currency", headers: Tokens.bearer(wide)).status == 400)
    }

    /// Without a key presence is open; streams have no users, only counts. A presence observer that
    /// reconnects with Last-Event-ID gets a fresh snapshot.
    @Test func openPresenceCountsAnonymousStreamsAndAReconnectGetsASnapshot() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let first = try server.stream("/currency/events")
        let second = try server.stream("/currency/events")
        #expect(eventually { (try? server.client().get("/presence?topic=currency").json["watchers"] as? Int) == 2 })
        #expect(try users(server, "currency").isEmpty)
        let lastId = try #require(try server.client().get("/currency").header("Herald-Event-ID"))
        let watcher = try server.stream("/events?topic=presence/currency", headers: [("Last-Event-ID", lastId)])
        let snapshot = try watcher.next()
        #expect(snapshot.event == "snapshot", "a presence observer that resumes starts with the state")
        #expect(snapshot.json["watchers"] as? Int == 2)
        first.close()
        second.close()
    }
}

extension PresenceTests {
    /// Fixed-seed sequences of streams opening and closing for six users, with the limit at 2: a
    /// client that replaces its list at each `snapshot` and applies `joined` and `left` ends holding
    /// what `GET /presence` answers (the list, or `truncated`), whichever side of the limit the
    /// sequence ends on, and whenever the watcher connected.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func aClientThatAppliesTheEventsEndsEqualToTheAnswerAcrossTheLimit(seed: UInt64) async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock, users: 2) { $0.presenceGrace = 0 }
        defer { server.stop() }
        let names = (0..<6).map { "u\($0)" }
        var tokens: [String: String] = [:]
        for name in names { tokens[name] = try await Tokens.make(sub: name, expires: Date().addingTimeInterval(3600)) }
        var random = Fuzzing.Generator(state: seed)
        var open: [(user: String, stream: SSEClient)] = []
        var watcher: SSEClient?
        /// What the client holds: the users, or nil while truncated.
        var held: Set<String>? = []
        func apply(_ event: SSEEvent) {
            switch event.event {
            case "snapshot":
                held = (event.json["truncated"] as? Bool) == true ? nil
                    : Set((event.json["users"] as? [[String: Any]] ?? []).compactMap { $0["sub"] as? String })
            case "joined": if let sub = event.json["sub"] as? String { held?.insert(sub) }
            case "left": if let sub = event.json["sub"] as? String { held?.remove(sub) }
            default: break
            }
        }
        let steps = 30
        let connectAt = Int.random(in: 0..<steps / 2, using: &random)
        for step in 0..<steps {
            if step == connectAt { watcher = try await watch(server, "presence/currency", as: "admin") }
            if !open.isEmpty, Bool.random(using: &random) {
                open.remove(at: Int.random(in: 0..<open.count, using: &random)).stream.close()
            } else {
                let user = names[Int.random(in: 0..<names.count, using: &random)]
                let stream = try server.stream("/currency/events", headers: Tokens.bearer(tokens[user] ?? ""))
                _ = try stream.next(named: "snapshot")
                open.append((user, stream))
            }
            while let event = try? watcher?.next(timeout: 0.05) { apply(event) }
        }
        let watching = try #require(watcher)
        let expected = Set(open.map(\.user))
        func answer() throws -> Set<String>? {
            let json = try presence(server, "currency")
            return (json["truncated"] as? Bool) == true ? nil : Set((json["users"] as? [[String: Any]] ?? []).compactMap { $0["sub"] as? String })
        }
        #expect(eventually { (try? answer()) == (expected.count > 2 ? nil : expected) }, "the server settles on the open streams")
        let settled = try answer()
        let deadline = Date().addingTimeInterval(10)
        while held != settled, Date() < deadline {
            if let event = try? watching.next(timeout: 0.2) { apply(event) }
        }
        #expect(held == settled, "seed \(seed): the client holds \(String(describing: held)), GET /presence answers \(String(describing: settled))")
    }
}
