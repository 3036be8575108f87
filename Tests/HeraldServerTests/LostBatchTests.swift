import Foundation
import HeraldDomain
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import HeraldThreads
import Synchronization
import Testing

/// The writer commits each batch of changes in one transaction. If that commit fails after every
/// change in it ran, none of them happened: each client is refused, nothing is published, the
/// sequence goes back, and memory, which takes a batch only once it is durable, never had them.
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

    /// Memory follows durability: while a batch commits, no reader sees its changes; once it has
    /// committed, they do; if its commit fails, they never do. Each change is held in its commit while
    /// the test reads everything it touches.
    @Test(arguments: [false, true]) func noReaderSeesAChangeBeforeItIsStored(commitFails: Bool) throws {
        let directory = temporaryDirectory("herald-staged")
        defer { removeTemporaryDirectory(directory) }
        // A clock that stands still, so that an auction's seconds left read the same before and after.
        let server = try TestHerald(clock: ManualClock(), dataDirectory: directory)
        defer { server.stop() }
        let store = try #require(server.herald.journal.store as? SQLiteStore)
        let client = server.client()
        let auction = try server.auction(countdown: 60)
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        #expect(try client.put("/units/a", #"{"name":"A","status":"healthy"}"#).status == 201)
        let trip = try #require(try client.post("/trips", #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z"}"#)
            .json["id"] as? String)
        let reads = ["/units/a", "/units/b", "/currency", "/auctions/\(auction)", "/auctions", "/trips", "/trips/\(trip)"]
        // What each read shows (a problem's own request id aside).
        func state() throws -> [String] {
            try reads.map { path in
                let response = try client.get(path)
                return response.status == 200 ? response.text : "\(response.status)"
            }
        }

        for (method, path, body) in [("PUT", "/units/b", #"{"name":"B","status":"healthy"}"#), ("DELETE", "/units/a", ""),
                                     ("PUT", "/currency", #"{"default":"euro"}"#),
                                     ("POST", "/auctions/\(auction)/bids", #"{"bidder":"bob","amount":9}"#),
                                     ("POST", "/auctions", #"{"item":"lamp"}"#),
                                     ("POST", "/trips", #"{"departure":"2016-10-09T13:09:53Z","arrival":"2016-10-09T13:26:33Z"}"#),
                                     ("POST", "/trips/\(trip)/delay", #"{"deltaSeconds":120}"#)] {
            let before = try state()
            let committing = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            // Let go on every way out of the round (a read below may throw): a writer left held here
            // would hold the server's stop, and the test run with it, for ever.
            defer { release.signal() }
            store.beforeNextCommit.withLock { $0 = SQLiteStore.Hook { committing.signal(); release.wait() } }
            store.failNextCommit.withLock { $0 = commitFails }
            let answer = Lock<Int?>(nil), answered = DispatchSemaphore(value: 0)
            let port = server.port
            Thread {
                answer.withLock { $0 = try? HTTPClient(port: port).request(method, path, json: body.isEmpty ? nil : body).status }
                answered.signal()
            }.start()
            #expect(committing.wait(timeout: .now() + 60) == .success, "\(method) \(path) reached its commit")
            #expect(try state() == before, "\(method) \(path): nothing of it shows while it commits")
            release.signal()
            #expect(answered.wait(timeout: .now() + 60) == .success)
            let status = try #require(answer.withLock { $0 })
            if commitFails {
                #expect(status == 503, "\(method) \(path)")
                #expect(try state() == before, "\(method) \(path): a lost change never shows")
            } else {
                #expect((200..<300).contains(status), "\(method) \(path)")
                #expect(try state() != before, "\(method) \(path): a stored change shows")
            }
        }
    }

    /// A countdown's firing whose batch is lost spent its timer: it fires again a second later, so the
    /// auction still closes, once.
    @Test func aFiringInALostBatchFiresAgain() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock, temporaryStore: true)
        defer { server.stop() }
        let store = try #require(server.herald.journal.store as? SQLiteStore)
        let client = server.client()
        let auction = try server.auction(countdown: 2)
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        let watcher = try server.stream("/auctions/\(auction)/events?snapshot=false")
        defer { watcher.close() }
        clock.advance(by: 1)
        #expect(try watcher.next(named: "tick").json["remainingSeconds"] as? Int == 1)

        store.failNextCommit.withLock { $0 = true }
        clock.advance(by: 1)  // the close is lost with its batch
        #expect(try client.get("/auctions/\(auction)").json["status"] as? String == "open")
        clock.advance(by: 1)  // fired again
        let closed = try watcher.next(named: "closed")
        #expect(closed.data.contains(#""winner":"ann""#), "\(closed.data)")
        #expect(try client.get("/auctions/\(auction)").json["status"] as? String == "closed")
        #expect(server.herald.auctions.liveTimers == 0)
    }
}
