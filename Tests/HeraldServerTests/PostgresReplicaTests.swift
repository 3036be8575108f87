import Foundation
import HeraldHTTP
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// Three Herald replicas on one PostgreSQL database (in this process, each with its own connections,
/// writer and listener), against the throwaway PostgreSQL `scripts/test` starts.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
struct PostgresReplicaTests {
    func replicas(_ url: String, count: Int = 3) throws -> [TestHerald] {
        try (0..<count).map { _ in try TestHerald { $0.postgresURL = url } }
    }

    /// Unit u1 written through `other` with `writer`, and a stream of it on `holder` opened with
    /// `first` (60 s on `clock`): its id, once its snapshot has come.
    static func unitStream(holder: TestHerald, other: TestHerald, clock: ManualClock) async throws
        -> (writer: String, first: String, stream: SSEClient, id: String) {
        let writer = try await Tokens.make(expires: Date().addingTimeInterval(3600))
        #expect(try other.client().request("PUT", "/units/u1", json: #"{"name":"U","status":"healthy"}"#, headers: Tokens.bearer(writer)).status == 201)
        #expect(eventually { (try? holder.client().get("/units/u1").status) == 200 })
        let first = try await Tokens.make(expires: clock.now.addingTimeInterval(60))
        let stream = try holder.stream("/units/u1/events", headers: Tokens.bearer(first))
        let id = try #require(try stream.next().json["stream"] as? String)
        #expect(try stream.next().event == "snapshot")
        return (writer, first, stream, id)
    }

    /// Two replicas with a token key: one whose streams' clock the test moves (it holds the stream),
    /// and another. The caller stops both.
    static func securedPair(_ url: String, clock: ManualClock) async throws -> (holder: TestHerald, other: TestHerald) {
        let holder = try await TestHerald.secured(examples: false, clock: clock) { configuration in
            configuration.postgresURL = url
            configuration.http.streamClock = clock
        }
        do {
            return (holder, try await TestHerald.secured(examples: false) { $0.postgresURL = url })
        } catch {
            holder.stop()
            throw error
        }
    }

    /// Bids go round-robin to the replicas, each one more than the last: each is taken (so each
    /// replica knew the price the others set), and every replica's observers see the same ids in the
    /// same order.
    @Test func bidsOnEveryReplicaFormOneOrderEveryObserverSees() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url)
        defer { for server in servers { server.stop() } }
        let auction = try servers[0].auction(countdown: 3600, startingPrice: 1)
        #expect(eventually { servers.allSatisfy { (try? $0.client().get("/auctions/\(auction)").status) == 200 } },
                "the auction reaches every replica")
        let streams = try servers.map { try $0.stream("/auctions/\(auction)/events?snapshot=false") }
        let bids = 30
        for number in 1...bids {
            let server = servers[number % servers.count]
            let response = try server.client().post("/auctions/\(auction)/bids", #"{"bidder":"b\#(number)","amount":\#(number)}"#)
            #expect(response.status == 201, "bid \(number) on replica \(number % servers.count): \(response.text)")
        }
        var orders: [[String]] = []
        for stream in streams {
            let events = try (0..<bids).map { _ in try stream.next(named: "bid", timeout: 10) }
            orders.append(events.compactMap(\.id))
            let amounts = events.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int }
            #expect(amounts == Array(1...bids), "prices strictly increase, in the order they were taken")
        }
        #expect(orders[0].count == bids)
        #expect(orders.allSatisfy { $0 == orders[0] }, "the same ids in the same order on every replica: \(orders)")
        let ids = orders[0].compactMap { UInt64($0) }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        for server in servers {
            #expect(try server.client().get("/auctions/\(auction)").json["price"] as? Int == bids)
        }
    }

    /// A replica that only streams takes in the other's commits from their news, between its batches:
    /// it runs no batch for them, so it never takes the database's write lock, and its observers see
    /// every change, with the writer's ids.
    @Test func aReplicaThatOnlyStreamsTakesInTheNewsWithoutTheLock() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let (writer, streamer) = (servers[0], servers[1])
        let auction = try writer.auction(countdown: 3600, startingPrice: 1)
        #expect(eventually { (try? streamer.client().get("/auctions/\(auction)").status) == 200 }, "the auction reaches the other replica")
        let streams = try servers.map { try $0.stream("/auctions/\(auction)/events?snapshot=false") }
        let batches = streamer.herald.journal.writer.statistics.batches
        let bids = 20
        for number in 1...bids {
            let response = try writer.client().post("/auctions/\(auction)/bids", #"{"bidder":"b\#(number)","amount":\#(number)}"#)
            #expect(response.status == 201)
        }
        let seen = try streams.map { stream in try (0..<bids).map { _ in try stream.next(named: "bid", timeout: 10).id ?? "" } }
        #expect(seen[1] == seen[0], "the same ids on both")
        #expect(streamer.herald.journal.writer.statistics.batches == batches, "the streaming replica ran no batch, so took no lock")
        #expect(try streamer.client().get("/auctions/\(auction)").json["price"] as? Int == bids)
    }

    /// Two replicas take changes of one unit from the same version (`If-Match`) at once: one is made
    /// and the others are 412, because each replica checks the version on its writer, after catching
    /// up under the store's lock.
    @Test func racingConditionalChangesOnTwoReplicasMakeOne() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let ports = servers.map(\.port)
        for round in 1...10 {
            let put = try servers[round % 2].client().put("/units/race", #"{"name":"start \#(round)","status":"healthy"}"#)
            let tag = try #require(put.header("ETag"))
            let statuses = Racers.run(6) { racer in
                try? HTTPClient(port: ports[racer % 2]).request("PUT", "/units/race", json: #"{"name":"racer \#(racer)","status":"dead"}"#,
                                                               headers: [("If-Match", tag)]).status
            }
            #expect(statuses.count { $0 == 200 } == 1, "round \(round): \(statuses)")
            #expect(statuses.count { $0 == 412 } == 5, "round \(round): \(statuses)")
        }
    }

    /// A renewal sent to the replica that does not hold the stream is carried to the one that does:
    /// the stream outlives its first token there; another subject's token is still 403, an unknown
    /// stream 404.
    @Test func aRenewalWorksOnTheReplicaThatDoesNotHoldTheStream() async throws {
        let url = try TestPostgres.database()
        let clock = ManualClock(now: Date())
        let (holder, other) = try await Self.securedPair(url, clock: clock)
        defer { holder.stop(); other.stop() }
        let (writer, _, stream, id) = try await Self.unitStream(holder: holder, other: other, clock: clock)
        let bob = try await Tokens.make(sub: "bob", expires: Date().addingTimeInterval(3600))
        let refused = try other.client().request("POST", "/streams/\(id)/token", headers: Tokens.bearer(bob))
        #expect(refused.status == 403, "\(refused.text)")
        let fresh = try await Tokens.make(expires: Date().addingTimeInterval(3600))
        let renewed = try other.client().request("POST", "/streams/\(id)/token", headers: Tokens.bearer(fresh))
        #expect(renewed.status == 204, "\(renewed.text)")
        clock.advance(by: 61)
        #expect(try other.client().request("PUT", "/units/u1", json: #"{"name":"U","status":"dead"}"#, headers: Tokens.bearer(writer)).status == 200)
        let changed = try stream.next(named: "unit")
        #expect((changed.json["unit"] as? [String: Any])?["status"] as? String == "dead", "renewed through the other replica: the stream is open past its first exp")
        #expect(try other.client().request("POST", "/streams/0123456789abcdef0123456789abcdef/token", headers: Tokens.bearer(fresh)).status == 404)
    }

    /// Presence is cluster-wide: ann watching through replica A shows on replica B, and when A dies
    /// (killed: no goodbye) its users are left on B once A's lease runs out (15 s) and their grace (5 s).
    @Test func presenceSpansReplicasAndADeadReplicasUsersLeave() async throws {
        let url = try TestPostgres.database()
        let dying = try HeraldProcess(arguments: ["--store", url, "--jwt-key", Tokens.secret, "--no-examples"])
        let survivor = try await TestHerald.secured(examples: false) { $0.postgresURL = url }
        defer { survivor.stop() }
        let admin = try await Tokens.make(sub: "admin")
        let watcher = try survivor.stream("/events?topic=presence/currency", headers: Tokens.bearer(admin))
        _ = try watcher.next(named: "snapshot")
        let ann = try await Tokens.make(sub: "ann")
        let stream = try SSEClient(port: dying.port, path: "/currency/events", headers: Tokens.bearer(ann))
        _ = try stream.next(named: "snapshot")
        func next() throws -> SSEEvent {
            while true {
                let event = try watcher.next(timeout: 45)
                if event.event == "joined" || event.event == "left" { return event }
            }
        }
        let joined = try next()
        #expect(joined.event == "joined" && joined.json["sub"] as? String == "ann", "ann on A shows on B: \(joined)")
        let answer = try survivor.client().get("/presence?topic=currency", headers: Tokens.bearer(admin)).json
        #expect((answer["users"] as? [[String: Any]])?.first?["sub"] as? String == "ann")
        let killed = ContinuousClock.now
        kill(dying.process.processIdentifier, SIGKILL)
        let left = try next()
        #expect(left.event == "left" && left.json["sub"] as? String == "ann")
        // Not a speed: the order of things. A said `alive` every 5 s, so its lease (15 s from the last)
        // ran out at least 9 s after the kill; ann left only then (the wait above bounds it at 45 s).
        let took = killed.duration(to: .now)
        #expect(took >= .seconds(9), "left only once A's lease ran out: \(took)")
        print("presence: a killed replica's user left on the other \(took) after the kill")
    }

    /// A bid sent to a replica right after another one created the auction is taken: whether the
    /// auction exists is decided on the writer, after catching up, not by what the replica last heard.
    @Test func aChangeRightAfterAnotherReplicasCreationIsTaken() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        for round in 1...20 {
            let auction = try servers[0].auction(countdown: 3600)
            let bid = try servers[1].client().post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":\#(round)}"#)
            #expect(bid.status == 201, "round \(round): \(bid.text)")
        }
        #expect(try servers[1].client().post("/auctions/999/bids", #"{"bidder":"ann","amount":1}"#).status == 404,
                "an auction no replica has is still 404")
    }

    /// Replicas that start at once on an empty database make the examples once between them: each
    /// reads the store again in its first batch, under the store's write lock. The test holds that
    /// lock until all three have read the empty database at start and wait for it.
    @Test func replicasStartingAtOnceMakeTheExamplesOnce() throws {
        let alone = try TestPostgres.database()
        try TestHerald(examples: true) { $0.postgresURL = alone }.stop()
        let sequenceAlone = try TestPostgres.run("SELECT value FROM herald_sequence", on: alone)
        let url = try TestPostgres.database()
        try TestHerald { $0.postgresURL = url }.stop()  // migrated, still empty
        let lock = try TestPostgres.HeldLock(PostgresStore.lockKey, on: url)
        final class Started: @unchecked Sendable {
            let lock = NSLock()
            var servers: [TestHerald] = []
            var failures: [String] = []
        }
        let started = Started()
        let group = DispatchGroup()
        // Threads of their own: each blocks in libpq on the lock, and a loaded machine's dispatch pool
        // may run fewer than three blocked work items at once (seen once in a full run: two waited).
        for _ in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let server = try TestHerald(examples: true) { $0.postgresURL = url }
                    started.lock.withLock { started.servers.append(server) }
                } catch {
                    started.lock.withLock { started.failures.append("\(error)") }
                }
            }.start()
        }
        let waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        #expect(eventually(timeout: 30) { (try? TestPostgres.run(waiting, on: url)) == "3" }, "all three wait for the write lock")
        lock.release()
        group.wait()
        defer { for server in started.servers { server.stop() } }
        #expect(started.failures.isEmpty, "\(started.failures)")
        try #require(started.servers.count == 3)
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_auctions", on: url) == "1", "one example auction stored")
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == sequenceAlone,
                "as many events as one Herald's examples make")
        for server in started.servers {
            #expect(eventually {
                let auctions = (try? server.client().get("/auctions").json["auctions"]) as? [[String: Any]]
                let trips = (try? server.client().get("/trips").json["trips"]) as? [[String: Any]]
                return auctions?.count == 1 && trips?.count == 1
            }, "one example auction and one example trip on every replica")
        }
    }

    /// A replica catches up by what the others changed: a unit removed on A is gone from B's memory
    /// and from its observers' current values (a new observer of the collection does not get it), and
    /// a trip, the currency and units changed on A are what B answers.
    @Test func aReplicaTakesInWhatAnotherChangedAndRemoved() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let (a, b) = (servers[0].client(), servers[1].client())
        #expect(try a.put("/units/alpha", #"{"name":"Alpha","status":"healthy"}"#).status == 201)
        #expect(try a.put("/units/beta", #"{"name":"Beta","status":"healthy"}"#).status == 201)
        #expect(eventually { (try? b.get("/units/alpha").status) == 200 && (try? b.get("/units/beta").status) == 200 })
        let before = try servers[1].stream("/units/events")
        #expect((try before.next().json["units"] as? [Any])?.count == 2)

        #expect(try a.request("DELETE", "/units/alpha").status == 204)
        #expect(try a.put("/units/beta", #"{"name":"Beta","status":"wounded"}"#).status == 200)
        // Removed and made again: B ends with it (a removal and a change of one unit, removal first).
        #expect(try a.put("/units/gamma", #"{"name":"Gamma","status":"healthy"}"#).status == 201)
        #expect(try a.request("DELETE", "/units/gamma").status == 204)
        #expect(try a.put("/units/gamma", #"{"name":"Gamma","status":"dead"}"#).status == 201)
        #expect(try a.put("/currency", #"{"default":"euro"}"#).status == 200)
        let trip = try a.post("/trips", #"{"departure":"2026-11-23T10:00:00Z","arrival":"2026-11-23T11:00:00Z"}"#)
        #expect(trip.status == 201)
        let tripId = try #require(trip.json["id"] as? String)
        #expect(eventually { (try? b.get("/trips/\(tripId)").status) == 200 }, "the trip reaches B")
        #expect(try b.get("/units/alpha").status == 404)
        #expect(try b.get("/units/beta").json["status"] as? String == "wounded")
        #expect(try b.get("/units/gamma").json["status"] as? String == "dead")
        #expect(try b.get("/currency").json["default"] as? String == "euro")
        #expect(try before.next().event == "left", "B's observer saw the removal")
        let after = try servers[1].stream("/units/events")
        let members = try after.next().json["units"] as? [[String: Any]]
        #expect(members?.compactMap { $0["id"] as? String } == ["beta", "gamma"], "a new observer on B gets beta and gamma, not alpha")
        // B's own next change goes on from what it took in: its next trip id follows A's.
        let next = try b.post("/trips", #"{"departure":"2026-11-23T12:00:00Z","arrival":"2026-11-23T13:00:00Z"}"#)
        #expect(next.json["id"] as? String == String((Int(tripId) ?? 0) + 1))
    }

    /// A replica that only streams catches up when it hears of a commit, by a batch of its own. When
    /// that batch is refused because PostgreSQL cannot be reached, the next commit it hears still
    /// wakes it: its observers see what the other replica changed once the database is back.
    @Test func aReplicaWhoseCatchUpWasRefusedCatchesUpAtTheNextCommit() throws {
        let url = try TestPostgres.database()
        let name = String(url[url.index(after: try #require(url.lastIndex(of: "/")))...])
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let (a, b) = (servers[0].client(), servers[1].client())
        #expect(try a.put("/units/alpha", #"{"name":"Alpha","status":"healthy"}"#).status == 201)
        #expect(eventually { (try? b.get("/units/alpha").status) == 200 })
        let watcher = try servers[1].stream("/units/events?snapshot=false")
        let store = try #require(servers[1].herald.journal.store as? PostgresStore)

        // The database takes no new connections, and the replicas' writers lose theirs (their
        // listeners keep theirs): B hears of a commit, and its catch-up cannot reach PostgreSQL.
        let session = try TestPostgres.Session(on: url)
        defer { try? TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS true") }
        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
        try TestPostgres.run("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> \(
                try #require(try session.run("SELECT pg_backend_pid()")))
                AND application_name <> '\(PostgresListener.applicationName)'
            """)
        let revision = try #require(try session.run("SELECT revision FROM herald_sequence").flatMap { Int64($0) })
        try session.run("NOTIFY herald, '\(store.seal.sealNews(String(revision + 1), channel: PostgresStore.channel))'")
        #expect(eventually { store.unwritableReason() != nil }, "B's catch-up found PostgreSQL unreachable")

        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        #expect(eventually { [200, 201].contains((try? a.put("/units/beta", #"{"name":"Beta","status":"healthy"}"#).status) ?? 0) })
        let seen = try watcher.next(named: "unit", timeout: 15)
        #expect((seen.json["unit"] as? [String: Any])?["id"] as? String == "beta", "B's observer saw A's change: \(seen.data)")
        #expect(try b.get("/units/beta").status == 200)
    }

    /// A replica that dies with countdowns running leaves nothing open: every replica runs every
    /// countdown, so the others close its auctions on time, once, with the winner it took.
    @Test func theAuctionsOfAReplicaThatDiesStillCloseOnTime() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { servers[1].stop() }
        let auctions = try (1...5).map { _ in try servers[0].auction(countdown: 2, startingPrice: 1) }
        #expect(eventually { auctions.allSatisfy { (try? servers[1].client().get("/auctions/\($0)").status) == 200 } })
        let watch = try servers[1].stream("/auctions/\(auctions[0])/events?snapshot=false")
        for (number, id) in auctions.enumerated() {
            #expect(try servers[0].client().post("/auctions/\(id)/bids", #"{"bidder":"w\#(number)","amount":5}"#).status == 201)
        }
        servers[0].stop()  // its timers go with it
        let closed = try watch.next(named: "closed", timeout: 10)
        #expect((closed.json["auction"] as? [String: Any])?["winner"] as? String == "w0")
        #expect(eventually(timeout: 30) {
            (try? TestPostgres.run("SELECT count(*) FROM herald_events WHERE name = 'closed'", on: url)) == "5"
        }, "the survivor closed all five")
        Thread.sleep(forTimeInterval: 2.5)  // a second close would come within a countdown's length
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_events WHERE name = 'closed'", on: url) == "5", "and none twice")
        for (number, id) in auctions.enumerated() {
            #expect(try servers[1].client().get("/auctions/\(id)").json["winner"] as? String == "w\(number)")
        }
    }

    /// A client that loses its replica resumes on another with `Last-Event-ID` and gets exactly what
    /// it missed: the ids are the database's, the same everywhere.
    @Test func aClientResumesOnAnotherReplicaWithExactlyWhatItMissed() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let first = try servers[0].stream("/notifications/door/events")
        var lastSeen = ""
        for number in 1...3 {
            _ = try servers[number % 2].client().post("/notifications/door", #"{"userInfo":{"n":\#(number)}}"#)
            lastSeen = try #require(try first.next(named: "notification").id)
        }
        first.close()
        for number in 4...6 {
            _ = try servers[number % 2].client().post("/notifications/door", #"{"userInfo":{"n":\#(number)}}"#)
        }
        let moved = try servers[1].stream("/notifications/door/events", headers: [("Last-Event-ID", lastSeen)])
        let missed = try (0..<3).map { _ in try moved.next(named: "notification", timeout: 10) }
        let payloads = missed.compactMap { ($0.json["userInfo"] as? [String: Any])?["n"] as? Int }
        #expect(payloads == [4, 5, 6], "\(missed.map(\.data))")
        // And nothing twice: the next event is one published after.
        _ = try servers[0].client().post("/notifications/door", #"{"userInfo":{"n":7}}"#)
        let following = try moved.next(named: "notification", timeout: 10)
        #expect((following.json["userInfo"] as? [String: Any])?["n"] as? Int == 7, "\(following.data)")
    }

    /// Three replicas run the same countdowns; closing is a change like any other, made under the
    /// database's write lock after catching up, so each auction closes once, with its winner.
    @Test func replicasRacingToCloseAuctionsCloseEachOnceWithItsWinner() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url)
        defer { for server in servers { server.stop() } }
        let count = 300
        var winners: [String: String] = [:]
        for number in 1...count {
            let server = servers[number % servers.count]
            let id = try server.auction(countdown: 2, startingPrice: 1)
            let bidder = "w\(number)"
            let other = servers[(number + 1) % servers.count]
            #expect(eventually { (try? other.client().get("/auctions/\(id)").status) == 200 })
            #expect(try other.client().post("/auctions/\(id)/bids", #"{"bidder":"\#(bidder)","amount":5}"#).status == 201)
            winners[id] = bidder
        }
        let closed = eventually(timeout: 30) {
            (try? TestPostgres.run("SELECT count(*) FROM herald_events WHERE name = 'closed'", on: url)) == String(count)
        }
        #expect(closed, "every auction closed")
        Thread.sleep(forTimeInterval: 2.5)  // a second close would come within a countdown's length
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_events WHERE name = 'closed'", on: url) == String(count),
                "and none twice")
        for server in servers {
            let auctions = try server.client().all("/auctions", "auctions")
            for auction in auctions {
                guard let id = auction["id"] as? String else { continue }
                #expect(auction["status"] as? String == "closed", "\(id)")
                #expect(auction["winner"] as? String == winners[id], "\(id)")
            }
        }
    }

    /// A retry that goes to another replica (its first answer was lost) finds the answer kept with the
    /// change in the database: one bid.
    @Test func aRetryOnAnotherReplicaIsAnsweredAgainAndMadeOnce() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.stop() } }
        let auction = try servers[0].auction(countdown: 3600)
        let body = #"{"bidder":"ann","amount":10}"#
        let first = try servers[0].client().request("POST", "/auctions/\(auction)/bids", json: body, headers: [("Idempotency-Key", "retry-1")])
        #expect(first.status == 201)
        let again = try servers[1].client().request("POST", "/auctions/\(auction)/bids", json: body, headers: [("Idempotency-Key", "retry-1")])
        #expect(again.status == 201 && again.text == first.text, "\(again.text)")
        #expect(again.header("Idempotency-Replayed") == "true")
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_bids", on: url) == "1")
    }
}
