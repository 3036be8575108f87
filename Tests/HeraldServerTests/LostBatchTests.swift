import Foundation
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// The writer commits each batch of changes in one transaction. If that commit fails after every
/// change in it ran, none of them happened: each client is refused, nothing is published, the
/// sequence goes back, and memory is reloaded from the store.
@Suite struct LostBatchTests {
    @Test func aBatchWhoseCommitFailsNeverHappened() throws {
        let directory = temporaryDirectory("herald-lost")
        defer { removeTemporaryDirectory(directory) }
        let auction = try lose(directory: directory)
        // The store has what was acknowledged, and nothing of the lost batches.
        let restarted = try TestHerald(dataDirectory: directory)
        defer { restarted.stop() }
        let units = try restarted.client().all("/units", "units").compactMap { $0["id"] as? String }
        #expect(units == ["a", "c"])
        #expect(try restarted.client().get("/auctions/\(auction)").json["price"] as? Int == 6)
    }

    /// Runs the lost batches on a server of `directory`, stops it, and returns the auction's id.
    private func lose(directory: String) throws -> String {
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        let store = try #require(server.herald.journal.store as? SQLiteStore)
        let client = server.client()
        let auction = try server.auction(countdown: 60)
        #expect(try client.put("/units/a", #"{"name":"A","status":"healthy"}"#).status == 201)
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        let watcher = try server.stream("/units/events?snapshot=false")
        let before = try client.get("/subjects").text

        for (method, path, body) in [("PUT", "/units/b", #"{"name":"B","status":"healthy"}"#), ("DELETE", "/units/a", ""),
                                     ("PUT", "/currency", #"{"default":"euro"}"#),
                                     ("POST", "/auctions/\(auction)/bids", #"{"bidder":"bob","amount":9}"#),
                                     ("POST", "/auctions", #"{"item":"ghost"}"#)] {
            store.failNextCommit.withLock { $0 = true }
            let refused = try client.request(method, path, json: body.isEmpty ? nil : body)
            #expect(refused.status == 503, "\(method) \(path)")
            #expect(refused.header("Retry-After") != nil)
        }
        #expect(try client.get("/units/b").status == 404)
        #expect(try client.get("/units/a").status == 200)
        #expect(try client.get("/currency").json["default"] as? String == "dollar")
        let state = try client.get("/auctions/\(auction)")
        #expect(state.json["price"] as? Int == 5 && state.json["leader"] as? String == "ann" && state.json["bidCount"] as? Int == 1)
        #expect(try client.all("/auctions", "auctions").count == 1)
        #expect(try client.get("/subjects").text == before, "no subject saw an event")

        // The next change takes the next number: none was used up by the lost batch.
        let lastId = try #require((try client.get("/health").json["lastEventId"] as? String).flatMap { UInt64($0) })
        #expect(try client.put("/units/c", #"{"name":"C","status":"dead"}"#).status == 201)
        let event = try watcher.next(named: "unit")
        #expect(event.id == String(lastId + 1))
        #expect((event.json["unit"] as? [String: Any])?["id"] as? String == "c", "the watcher saw nothing of the lost batch")
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"cy","amount":6}"#).status == 201, "bids go on from the stored price")
        #expect(try client.post("/auctions", #"{"item":"real"}"#).json["id"] as? String == "2", "the lost auction's id is given again")
        watcher.close()
        return auction
    }

    /// A lost batch whose memory cannot be reloaded (the store cannot be read: here a record that is
    /// not JSON; with PostgreSQL, a database that is gone) leaves memory ahead of the store. Then no
    /// change runs, each is refused, until memory is reloaded before a later batch.
    @Test func memoryThatCannotBeReloadedRefusesChangesUntilItIs() throws {
        let directory = temporaryDirectory("herald-stale")
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        let store = try #require(server.herald.journal.store as? SQLiteStore)
        let client = server.client()
        #expect(try client.put("/units/a", #"{"name":"A","status":"healthy"}"#).status == 201)
        try store.connection.withLock { try $0.execute("INSERT INTO records (kind, id, document) VALUES ('unit', 'zz', x'7b')") }
        store.failNextCommit.withLock { $0 = true }
        #expect(try client.put("/units/b", #"{"name":"B","status":"healthy"}"#).status == 503)

        let refused = try client.put("/units/c", #"{"name":"C","status":"healthy"}"#)
        #expect(refused.status == 503)
        #expect(refused.text.contains("the store cannot be read"), "\(refused.text)")
        #expect(try client.get("/units/c").status == 404, "the refused change did not run")
        #expect(try client.get("/health/ready").status == 503)

        try store.connection.withLock { try $0.execute("DELETE FROM records WHERE id = 'zz'") }
        #expect(try client.put("/units/c", #"{"name":"C","status":"healthy"}"#).status == 201)
        #expect(try client.get("/units/b").status == 404, "memory was reloaded first: the lost change is gone")
        #expect(try client.get("/health/ready").status == 200)
    }
}
