import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// Data directories written by earlier Heralds open with everything in them. Each fixture was made
/// once, by the code whose schema it records (`scripts/make-store-fixture`; `WRITTEN-BY` names the
/// commit), and is never remade: a later schema must migrate it.
@Suite struct StoreFixtureTests {
    /// A copy of a fixture's files in a fresh directory (opening migrates in place).
    func copy(_ fixture: String) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(fixture)
        let directory = temporaryDataDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name.hasSuffix(".sqlite3") {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name),
                                             to: URL(fileURLWithPath: directory).appendingPathComponent(name))
        }
        return directory
    }

    /// The same changes in each (`scripts/make-store-fixture`): the example data, auction 2 with three
    /// bids and its countdown running, auction 3 closed, the currency set, a unit changed and one
    /// removed, a trip delayed, a notification. Schema 1 (2026-11-22) holds events 1–13, two of them
    /// stored countdown ticks; schema 2 (2026-11-23) events 1–11, ticks being no longer stored; schema 5
    /// (2026-11-28, the last before auctions had a currency) events 1–15, the examples being events too.
    @Test(arguments: [("store-schema-1", 13), ("store-schema-2", 11), ("store-schema-5", 15)])
    func anEarlierDataDirectoryOpensWithEverythingInIt(fixture: String, lastEvent: Int) throws {
        let directory = try copy(fixture)
        defer { removeTemporaryDirectory(directory) }
        do {
            let server = try TestHerald(dataDirectory: directory)
            defer { server.stop() }
            try holdsTheFixturesChanges(server, lastEvent: lastEvent)
        }
        // Schema 2: the auctions and their bids moved out of their records, and the stored ticks are gone.
        #expect(try TransientTickTests.storedEvents(named: "tick", in: directory) == 0)
        #expect(try TransientTickTests.storedEvents(named: "bid", in: directory) == 4)
    }

    /// The SQL of a PostgreSQL fixture (`scripts/make-store-fixture --postgres`), loaded into a new
    /// database; returns its URL. psql's own commands (`\restrict`) are left out: libpq runs the rest.
    func postgresFixture(_ fixture: String) throws -> String {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(fixture).appendingPathComponent("herald.sql")
        let sql = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("\\") }.joined(separator: "\n")
        let url = try TestPostgres.database()
        try TestPostgres.run(sql, on: url)
        return url
    }

    /// What the main of 2026-11-29 wrote to PostgreSQL restores unchanged: everything in it, and its
    /// lobby's stored tags, which replay as they did.
    @Test(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
    func aPostgreSQLDatabaseOfTodaysMainOpensWithEverythingInItAndItsLobbyReplays() throws {
        let url = try postgresFixture("postgres-schema-6")
        let server = try TestHerald { $0.postgresURL = url }
        defer { server.stop() }
        try holdsTheFixturesChanges(server, lastEvent: 15)
        try lobbyReplaysAsItDid(server)
    }

    /// The fixture's changes (`scripts/make-store-fixture`), in a Herald that opened it.
    func holdsTheFixturesChanges(_ server: TestHerald, lastEvent: Int) throws {
        let client = server.client()
        let lamp = try client.get("/auctions/2").json
        #expect(lamp["item"] as? String == "Fixture lamp")
        #expect(lamp["price"] as? Int == 15 && lamp["leader"] as? String == "cem" && lamp["bidCount"] as? Int == 3)
        // Its countdown ran out an hour after the fixture was made: open before that, closed after.
        let status = lamp["status"] as? String
        #expect(status == "open" || (status == "closed" && lamp["winner"] as? String == "cem"))
        let bids = try #require(try client.get("/auctions/2/bids").json["bids"] as? [[String: Any]])
        #expect(bids.compactMap { $0["bidder"] as? String } == ["ann", "bob", "cem"])
        #expect(bids.compactMap { $0["amount"] as? Int } == [10, 12, 15])
        let vase = try client.get("/auctions/3").json
        #expect(vase["status"] as? String == "closed" && vase["winner"] as? String == "dan")
        #expect(try client.get("/currency").json["default"] as? String == "euro")
        let units = try #require(try client.get("/units").json["units"] as? [[String: Any]])
        #expect(units.compactMap { $0["id"] as? String } == ["medic"])
        #expect(units.first?["status"] as? String == "wounded")
        #expect(try client.get("/trips/1").json["delaySeconds"] as? Int == 420)
        // The next event is the lamp's `closed` when its countdown ran out before this start.
        let last = String(status == "closed" ? lastEvent + 1 : lastEvent)
        #expect(try client.get("/health").json["lastEventId"] as? String == last)

        let replay = try server.stream("/auctions/2/events", headers: [("Last-Event-ID", "1")])
        var replayed: [String] = []
        while replayed.count < 3 {
            let event = try replay.next(timeout: 5)
            if event.event == "bid", let bidder = (event.json["bid"] as? [String: Any])?["bidder"] as? String { replayed.append(bidder) }
        }
        #expect(replayed == ["ann", "bob", "cem"], "replay from before the bids is exact")
        let next = try client.post("/notifications/ping", #"{"userInfo":{"n":2}}"#).json["id"] as? String
        #expect(next == String((UInt64(last) ?? 0) + 1), "the sequence continues after the fixture's last event")
    }

    /// What the main of 2026-11-28 wrote (schema 5) restores unchanged: the lobby's stored tags
    /// (`was:status=open`, `is:status=closed`) replay as they did, so a lobby resumed from before the
    /// fixture's changes gets auction 2's entry and bids and auction 3's `left` when it closed; and the
    /// auctions from before currencies are in dollars.
    @Test func aSchema5LobbyReplaysAsItDidAndItsAuctionsAreInDollars() throws {
        let directory = try copy("store-schema-5")
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        #expect(try server.client().get("/auctions/2").json["currency"] as? String == "dollar")
        try lobbyReplaysAsItDid(server)
    }

    /// A lobby resumed from before the fixture's changes gets auction 2's entry and bids and auction
    /// 3's `left` when it closed, from the stored tags.
    func lobbyReplaysAsItDid(_ server: TestHerald) throws {
        let lobby = try server.stream("/auctions/events?status=open", headers: [("Last-Event-ID", "3")])
        defer { lobby.close() }
        var seen: [String] = []
        while !seen.contains("left 3"), seen.count < 20 {
            guard let event = try? lobby.next(timeout: 5) else { break }
            let id = (event.json["auction"] as? [String: Any])?["id"] as? String ?? event.json["id"] as? String ?? "?"
            seen.append("\(event.event ?? "-") \(id)")
        }
        #expect(seen == ["auction 2", "auction 2", "auction 2", "auction 2", "auction 3", "auction 3", "left 3"], "\(seen)")
    }
}
