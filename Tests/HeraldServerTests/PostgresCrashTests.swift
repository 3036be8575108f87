import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// PostgreSQL killed in a burst of bids on two replicas, on a PostgreSQL of the test's own.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "scripts/test installs PostgreSQL and says so with HERALD_TEST_POSTGRES"))
struct PostgresCrashTests {
    /// kill -9 of PostgreSQL and all its processes (no checkpoint: it recovers from its log at the
    /// next start) in the middle of the bids: no acknowledged bid is lost, changes are refused (503) while it is down and
    /// taken again once it is back, and each replica's observer sees every stored bid once, in order.
    @Test func aCrashOfPostgreSQLLosesNoAcknowledgedBidAndObserversSeeEachOnce() throws {
        let postgres = try PrivatePostgres()
        defer { postgres.stop() }
        let servers = try (0..<2).map { _ in try TestHerald { $0.postgresURL = postgres.url } }
        defer { for server in servers { server.stop() } }
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
        }
        // And nothing more: the next event each replica's observer sees is a marker published after.
        let marker = (amounts.last ?? 0) + 1000
        #expect(try servers[0].client().post("/auctions/\(auction)/bids", #"{"bidder":"marker","amount":\#(marker)}"#).status == 201)
        for (index, stream) in streams.enumerated() {
            let following = try stream.next(named: "bid", timeout: 10)
            #expect((following.json["bid"] as? [String: Any])?["amount"] as? Int == marker, "replica \(index): \(following.data)")
        }
    }
}
