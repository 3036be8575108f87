import Foundation
@testable import HeraldServer
import HeraldStore
import HeraldTestSupport
import Testing

/// Three Herald replicas on one PostgreSQL database (in this process, each with its own connections,
/// writer and listener), against the throwaway PostgreSQL `scripts/test` starts.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
struct PostgresReplicaTests {
    func replicas(_ url: String, count: Int = 3) throws -> [TestHerald] {
        try (0..<count).map { _ in try TestHerald { $0.postgresURL = url } }
    }

    /// Bids go round-robin to the replicas, each one more than the last: each is taken (so each
    /// replica knew the price the others set), and every replica's observers see the same ids in the
    /// same order.
    @Test func bidsOnEveryReplicaFormOneOrderEveryObserverSees() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url)
        defer { for server in servers { server.herald.stop() } }
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

    /// A bid sent to a replica right after another one created the auction is taken: whether the
    /// auction exists is decided on the writer, after catching up, not by what the replica last heard.
    @Test func aChangeRightAfterAnotherReplicasCreationIsTaken() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.herald.stop() } }
        for round in 1...20 {
            let auction = try servers[0].auction(countdown: 3600)
            let bid = try servers[1].client().post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":\#(round)}"#)
            #expect(bid.status == 201, "round \(round): \(bid.text)")
        }
        #expect(try servers[1].client().post("/auctions/999/bids", #"{"bidder":"ann","amount":1}"#).status == 404,
                "an auction no replica has is still 404")
    }

    /// A client that loses its replica resumes on another with `Last-Event-ID` and gets exactly what
    /// it missed: the ids are the database's, the same everywhere.
    @Test func aClientResumesOnAnotherReplicaWithExactlyWhatItMissed() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url, count: 2)
        defer { for server in servers { server.herald.stop() } }
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
        #expect(try moved.receivesEvent(within: 0.5) == false, "and nothing twice")
    }

    /// Three replicas run the same countdowns; closing is a change like any other, made under the
    /// database's write lock after catching up, so each auction closes once, with its winner.
    @Test func replicasRacingToCloseAuctionsCloseEachOnceWithItsWinner() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url)
        defer { for server in servers { server.herald.stop() } }
        let count = 60
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
        let closed = eventually(timeout: 20) {
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
        defer { for server in servers { server.herald.stop() } }
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

/// PostgreSQL killed in a burst of bids on two replicas, on a PostgreSQL of the test's own.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "scripts/test installs PostgreSQL and says so with HERALD_TEST_POSTGRES"))
struct PostgresCrashTests {
    /// An immediate stop (no checkpoint: PostgreSQL recovers from its log at the next start) in the
    /// middle of the bids: no acknowledged bid is lost, changes are refused (503) while it is down and
    /// taken again once it is back, and each replica's observer sees every stored bid once, in order.
    @Test func aCrashOfPostgreSQLLosesNoAcknowledgedBidAndObserversSeeEachOnce() throws {
        let postgres = try PrivatePostgres()
        let servers = try (0..<2).map { _ in try TestHerald { $0.postgresURL = postgres.url } }
        defer { for server in servers { server.herald.stop() } }
        let auction = try servers[0].auction(countdown: 3600)
        #expect(eventually { (try? servers[1].client().get("/auctions/\(auction)").status) == 200 })
        let streams = try servers.map { try $0.stream("/auctions/\(auction)/events?snapshot=false") }
        var acknowledged: [Int] = []
        var refused = 0
        let (crashAt, restartAt, total) = (40, 60, 140)
        for round in 0..<total {
            if round == crashAt { try postgres.crash() }
            if round == restartAt { try postgres.restart() }
            let amount = round + 1
            let response = try? servers[round % 2].client().post("/auctions/\(auction)/bids", #"{"bidder":"b","amount":\#(amount)}"#)
            if response?.status == 201 { acknowledged.append(amount) } else { refused += 1 }
            if round >= restartAt { Thread.sleep(forTimeInterval: 0.01) }  // time for the listeners to connect again
        }
        #expect(refused >= restartAt - crashAt, "refused while PostgreSQL was down")
        #expect(acknowledged.contains { $0 > restartAt + 20 }, "and taken again after")
        let stored = try #require(try TestPostgres.run("SELECT string_agg(amount::text, ',' ORDER BY number) FROM herald_bids",
                                                       on: postgres.url))
        let amounts = stored.split(separator: ",").compactMap { Int($0) }
        #expect(Set(acknowledged).isSubset(of: Set(amounts)), "no acknowledged bid lost: \(Set(acknowledged).subtracting(amounts).sorted())")
        #expect(amounts == amounts.sorted() && Set(amounts).count == amounts.count)
        for (index, stream) in streams.enumerated() {
            let seen = try (0..<amounts.count).map { _ in try stream.next(named: "bid", timeout: 10) }
            let seenAmounts = seen.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int }
            #expect(seenAmounts == amounts, "replica \(index) saw every stored bid once, in order")
            let ids = seen.compactMap { $0.id.flatMap { UInt64($0) } }
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "replica \(index): \(ids)")
            #expect(stream.receivesEvent(within: 0.3) == false, "and nothing more")
        }
    }
}

