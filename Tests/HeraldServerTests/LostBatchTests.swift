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
        let directory = NSTemporaryDirectory() + "herald-lost-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let auction = try lose(directory: directory)
        // The store has what was acknowledged, and nothing of the lost batches.
        let restarted = try TestHerald(dataDirectory: directory)
        defer { restarted.herald.stop() }
        let units = try restarted.client().all("/units", "units").compactMap { $0["id"] as? String }
        #expect(units == ["a", "c"])
        #expect(try restarted.client().get("/auctions/\(auction)").json["price"] as? Int == 6)
    }

    /// Runs the lost batches on a server of `directory`, stops it, and returns the auction's id.
    private func lose(directory: String) throws -> String {
        let server = try TestHerald(dataDirectory: directory)
        defer { server.herald.stop() }
        let store = try #require(server.herald.journal.store)
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
}
