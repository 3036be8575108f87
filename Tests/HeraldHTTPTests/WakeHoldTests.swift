import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Testing

@Suite struct WakeHoldTests {
    /// During a hold, a wake-up asked for on the owner's thread is kept, once, and its end says so;
    /// outside a hold, or on another thread during one, a wake-up goes out at once.
    @Test func aHoldKeepsOnlyItsOwnersWakeUps() {
        let owner = OwnerThread(name: "test-owner")
        let hold = WakeHold(owner: owner)
        let done = DispatchSemaphore(value: 0)
        let seen = Lock<[String: Bool]>([:])
        let held = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        Thread {
            owner.bindToCurrentThread()
            seen.withLock { $0["before the hold"] = hold.keep() }
            hold.begin()
            held.signal()
            checked.wait()
            seen.withLock { $0["during the hold"] = hold.keep() }
            seen.withLock { $0["twice"] = hold.keep() }
            seen.withLock { $0["ended, kept one"] = hold.end() }
            seen.withLock { $0["after the end"] = hold.keep() }
            hold.begin()
            seen.withLock { $0["ended, kept none"] = hold.end() }
            done.signal()
        }.start()
        held.wait()
        seen.withLock { $0["another thread"] = hold.keep() }
        checked.signal()
        done.wait()
        #expect(seen.withLock { $0 } == [
            "before the hold": false, "another thread": false, "during the hold": true, "twice": true,
            "ended, kept one": true, "after the end": false, "ended, kept none": false,
        ])
    }
}
