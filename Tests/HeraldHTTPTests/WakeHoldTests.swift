import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Testing

@Suite struct WakeHoldTests {
    /// During a hold, a wake-up asked for on the owner's thread is kept, once for each loop, and its end
    /// names those loops; outside a hold, or on another thread during one, a wake-up goes out at once.
    @Test func aHoldKeepsOnlyItsOwnersWakeUps() {
        let owner = OwnerThread(name: "test-owner")
        let hold = WakeHold(owner: owner)
        let done = DispatchSemaphore(value: 0)
        let seen = Lock<[String: UInt64]>([:])
        let held = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        Thread {
            owner.bindToCurrentThread()
            seen.withLock { $0["before the hold"] = hold.keep(0) ? 1 : 0 }
            hold.begin()
            held.signal()
            checked.wait()
            seen.withLock { $0["during the hold"] = hold.keep(0) ? 1 : 0 }
            seen.withLock { $0["twice"] = hold.keep(0) ? 1 : 0 }
            seen.withLock { $0["another loop"] = hold.keep(3) ? 1 : 0 }
            seen.withLock { $0["ended, kept two loops"] = hold.end() }
            seen.withLock { $0["after the end"] = hold.keep(0) ? 1 : 0 }
            hold.begin()
            seen.withLock { $0["ended, kept none"] = hold.end() }
            done.signal()
        }.start()
        held.wait()
        seen.withLock { $0["another thread"] = hold.keep(0) ? 1 : 0 }
        checked.signal()
        done.wait()
        #expect(seen.withLock { $0 } == [
            "before the hold": 0, "another thread": 0, "during the hold": 1, "twice": 1, "another loop": 1,
            "ended, kept two loops": 0b1001, "after the end": 0, "ended, kept none": 0,
        ])
    }
}
