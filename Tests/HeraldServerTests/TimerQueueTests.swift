import Dispatch
import Foundation
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import HeraldThreads
import Testing

/// The timers' thread queues a firing on the writer and moves on: a commit held by the test (a slow
/// disk, a long batch) delays the changes behind it, not every other timer of the process.
@Suite struct TimerQueueTests {
    @Test func aHeldCommitDoesNotHoldTheTimers() throws {
        let server = try TestHerald(temporaryStore: true)
        defer { server.stop() }
        let store = try #require(server.herald.journal.store as? SQLiteStore)
        let client = server.client()
        // A countdown that fires a second after its bid: its firing comes while the commit is held.
        let auction = try server.auction(countdown: 5)
        #expect(try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)

        let committing = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        store.beforeNextCommit.withLock { $0 = SQLiteStore.Hook { committing.signal(); release.wait() } }
        let port = server.port
        let answered = DispatchSemaphore(value: 0)
        Thread {
            _ = try? HTTPClient(port: port).put("/units/held", #"{"name":"Held","status":"healthy"}"#)
            answered.signal()
        }.start()
        #expect(committing.wait(timeout: .now() + 30) == .success, "the change reached its commit, and waits there")
        // The countdown's firing falls due meanwhile (a second after the bid). Waiting on the writer,
        // it held the timers' thread, and presence's second, which runs there, with it.
        Thread.sleep(forTimeInterval: 2)
        let presence = try server.stream("/events?topic=presence/units/x")
        defer { presence.close() }
        #expect(try presence.next().json["watchers"] as? Int == 0)
        let watcher = try server.stream("/units/x/events")
        defer { watcher.close() }
        var count: Int?
        while count != 1 {
            let event = try presence.next(timeout: 15)
            if event.event == "watchers" { count = event.json["watchers"] as? Int }
        }
        #expect(count == 1, "presence's second ran while the commit was held")
        release.signal()
        #expect(answered.wait(timeout: .now() + 30) == .success)
        // And the firing, queued behind the held batch, ran after it: the countdown goes on.
        let ticking = try server.stream("/auctions/\(auction)/events?snapshot=false")
        defer { ticking.close() }
        #expect(try ticking.next(named: "tick").json["remainingSeconds"] != nil)
    }
}
