import Foundation
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import HeraldHTTP
import HeraldThreads
import Logging
import Testing

/// Herald with `--store postgres://…`, one replica, against the throwaway PostgreSQL `scripts/test`
/// starts.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
struct PostgresHeraldTests {
    @Test func stateSequenceAndReplaySurviveARestart() throws {
        let url = try TestPostgres.database()
        var before: [String: String] = [:]
        var idBeforeBids = ""
        var lastId = ""
        var auction = ""
        do {
            let server = try TestHerald(examples: true) { $0.postgresURL = url }
            defer { server.stop() }
            let client = server.client()
            auction = try server.auction(countdown: 3600, startingPrice: 10)
            let stream = try server.stream("/auctions/\(auction)/events")
            idBeforeBids = try #require(try stream.next().id)
            #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":10}"#).status == 201)
            #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"bob","amount":12}"#).status == 201)
            _ = try client.put("/currency", #"{"default":"gramGold"}"#)
            _ = try client.put("/units/medic", #"{"name":"Medic","status":"wounded"}"#)
            _ = try client.request("DELETE", "/units/scout")
            lastId = try #require(try client.post("/notifications/ping", #"{}"#).json["id"] as? String)
            for path in ["/auctions", "/auctions/\(auction)/bids", "/currency", "/units", "/trips"] {
                before[path] = Self.timeless(try client.get(path).text)
            }
            server.stop()
        }
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == lastId, "the sequence row is the last id")
        let server = try TestHerald(examples: true) { $0.postgresURL = url }
        defer { server.stop() }
        let client = server.client()
        for (path, text) in before {
            #expect(Self.timeless(try client.get(path).text) == text, "\(path) after the restart")
        }
        let replay = try server.stream("/auctions/\(auction)/events", headers: [("Last-Event-ID", idBeforeBids)])
        #expect(try replay.next(2).compactMap { ($0.json["bid"] as? [String: Any])?["bidder"] as? String } == ["ann", "bob"])
        let next = try #require(try client.post("/notifications/ping", #"{}"#).json["id"] as? String)
        #expect(UInt64(next) == (UInt64(lastId) ?? 0) + 1, "the sequence continues, never reused")
    }

    /// What makes memory follow the shared store is given to the writer when it starts: setting Herald
    /// up runs one batch, the restore's. (Given by two setters, each ran a batch of its own on the
    /// thread that set Herald up, each a transaction with PostgreSQL's write lock: three.)
    @Test func settingUpRunsOneBatchTheRestores() throws {
        var configuration = HeraldConfiguration()
        (configuration.http.host, configuration.http.port) = ("127.0.0.1", 0)
        configuration.postgresURL = try TestPostgres.database()
        configuration.examples = false
        var quiet = Logger(label: "test")
        quiet.logLevel = .warning
        let herald = try Herald(configuration: configuration, logger: quiet)
        #expect(herald.journal.writer.statistics.batches == 1, "\(herald.journal.writer.statistics)")
        try herald.start()
        herald.stop()
    }

    /// The text without what the clock changes: an auction's remaining seconds (a CI run that was slow
    /// to restart crossed a second).
    static func timeless(_ text: String) -> String {
        text.replacing(/"remainingSeconds":[0-9]+/, with: "\"remainingSeconds\":_")
    }

    /// `/metrics` tells how long batches waited for the database's write lock and held it: a change
    /// whose batch waits 0.5 s for the lock another session holds counts at least that in its wait.
    @Test func metricsTellHowLongBatchesWaitedForTheWriteLockAndHeldIt() throws {
        let url = try TestPostgres.database()
        let server = try TestHerald { $0.postgresURL = url }
        defer { server.stop() }
        let client = server.client()
        /// The lock histograms' sums and counts, from one scrape: (waited, held).
        func histograms() throws -> (waited: (sum: Double, count: Int), held: (sum: Double, count: Int)) {
            let lines = try client.get("/metrics").text.split(separator: "\n")
            func value(_ name: String) -> Double {
                lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
            }
            func histogram(_ name: String) -> (sum: Double, count: Int) { (value(name + "_sum"), Int(value(name + "_count"))) }
            return (histogram("herald_store_lock_wait_seconds"), histogram("herald_store_lock_held_seconds"))
        }
        let (waitedBefore, heldBefore) = try histograms()
        #expect(waitedBefore.count >= 0 && heldBefore.count == waitedBefore.count, "both are there: \(waitedBefore), \(heldBefore)")

        let held = try TestPostgres.HeldLock(PostgresStore.lockKey, on: url)
        let answer = Lock<Int?>(nil)
        let port = server.port
        let putting = Thread {
            let status = try? HTTPClient(port: port).put("/units/a", #"{"name":"A","status":"healthy"}"#).status
            answer.withLock { $0 = status ?? 0 }
        }
        putting.start()
        #expect(eventually {
            (try? TestPostgres.run("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", on: url)) == "1"
        }, "the change's batch waits for the lock")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(answer.withLock { $0 } == nil, "the change waits for the lock")
        held.release()
        #expect(eventually { answer.withLock { $0 } == 201 }, "answered \(String(describing: answer.withLock { $0 }))")
        let (waited, heldTimes) = try histograms()
        #expect(waited.count > waitedBefore.count && heldTimes.count == waited.count, "one more batch: \(waited), \(heldTimes)")
        #expect(waited.sum - waitedBefore.sum >= 0.5, "it waited while the test held the lock: \(waited.sum - waitedBefore.sum) s")
        #expect(heldTimes.sum > heldBefore.sum, "and held it until its commit")
    }

    /// The database goes away: a change gets 503 (problem+json, Retry-After) and changes nothing,
    /// readiness says why, streams stay open; when it is back, changes go through again.
    @Test func withoutItsDatabaseHeraldRefusesChangesAndRecoversWhenItReturns() throws {
        let url = try TestPostgres.database()
        let name = try #require(URL(string: url)?.lastPathComponent)
        let server = try TestHerald { $0.postgresURL = url }
        defer { server.stop() }
        let client = server.client()
        let auction = try server.auction(countdown: 3600, startingPrice: 10)
        let stream = try server.stream("/auctions/\(auction)/events")
        _ = try stream.next()
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":10}"#).status == 201)
        _ = try stream.next()

        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
        try TestPostgres.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        for amount in [20, 30] {
            let refused = try client.post("/auctions/\(auction)/bids", #"{"bidder":"bob","amount":\#(amount)}"#)
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.header("Retry-After") != nil)
        }
        let ready = try client.get("/health/ready")
        #expect(ready.status == 503)
        #expect(ready.text.contains("PostgreSQL") || ready.text.contains("commit"), "\(ready.text)")
        let price = try client.get("/auctions/\(auction)").json["price"] as? Int
        #expect(price == 10, "a refused bid changed nothing")

        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        let accepted = try client.post("/auctions/\(auction)/bids", #"{"bidder":"bob","amount":20}"#)
        #expect(accepted.status == 201, "\(accepted.text)")
        let seen = try stream.next()
        #expect((seen.json["bid"] as? [String: Any])?["bidder"] as? String == "bob", "the stream stayed open and sees the next bid")
        // Ready again once the listener has connected again too (it tries every half second).
        #expect(try eventually(timeout: 30) { try client.get("/health/ready").status == 200 })
        #expect(try TestPostgres.run("SELECT string_agg(bidder || ':' || amount, ',' ORDER BY number) FROM herald_bids", on: url)
                == "ann:10,bob:20")
    }

    @Test func anUnreachableDatabaseStopsTheStartWithAMessage() throws {
        let port = try #require(TestPostgres.adminURL.flatMap { URLComponents(string: $0)?.port })
        let closed = (port + 1000) % 60_000 + 1024
        #expect { try TestHerald { $0.postgresURL = "postgres://postgres@127.0.0.1:\(closed)/postgres" } } throws: {
            "\($0)".contains("cannot connect to PostgreSQL")
        }
    }

    @Test func theCommandKeepsStateInTheDatabaseItNamesAndLogsItWithoutThePassword() throws {
        let url = try TestPostgres.database()
        // The throwaway server trusts loopback clients: the password is only there to be kept out of the log.
        let withPassword = url.replacingOccurrences(of: "postgres@", with: "postgres:secret-in-the-url@")
        let herald = try HeraldProcess(arguments: ["--store", withPassword, "--no-examples"])
        #expect(try HTTPClient(port: herald.port).put("/units/x", #"{"name":"X","status":"healthy"}"#).status == 201)
        #expect(try TestPostgres.run("SELECT id FROM herald_records", on: url) == "x")
        #expect(herald.log.text.contains("store opened"))
        #expect(herald.log.text.contains("127.0.0.1"), "the log names the database's host")
        #expect(!herald.log.text.contains("secret-in-the-url"), "\(herald.log.text)")
    }
}
