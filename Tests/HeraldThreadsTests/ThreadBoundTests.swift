import Foundation
import HeraldThreads
import Testing

@Suite struct ThreadBoundTests {
    /// The owner's thread reaches its state; before the owner runs, the thread that builds it may.
    @Test func theOwnerAndTheBuilderReachTheState() {
        let owner = OwnerThread(name: "test-owner")
        let bound = ThreadBound(0, owner: owner)
        bound.withValue { $0 = 1 }  // not started yet: set-up
        let done = DispatchSemaphore(value: 0)
        let seen = Lock(0)
        Thread {
            owner.bindToCurrentThread()
            bound.withValue { $0 += 1 }
            seen.withLock { $0 = bound.withValue { $0 } }
            done.signal()
        }.start()
        done.wait()
        #expect(seen.withLock { $0 } == 2)
        #expect(!owner.isCurrent)
    }

    /// Another thread that reaches for the state once the owner runs stops the process, in every build.
    @Test func anotherThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let owner = OwnerThread(name: "test-owner")
            let bound = ThreadBound(0, owner: owner)
            let bound2 = DispatchSemaphore(value: 0)
            Thread {
                owner.bindToCurrentThread()
                bound2.signal()
                Thread.sleep(forTimeInterval: 60)
            }.start()
            bound2.wait()
            bound.withValue { $0 += 1 }
        }
    }

    /// Before the owner runs, the thread that built it is the one that sets its state up, bound
    /// explicitly: another thread reaching for it then stops the process too (it once passed, any
    /// thread while the owner was unbound).
    @Test func anotherThreadBeforeTheOwnerRunsStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let owner = OwnerThread(name: "test-owner")
            let bound = ThreadBound(0, owner: owner)
            let done = DispatchSemaphore(value: 0)
            Thread {
                bound.withValue { $0 += 1 }
                done.signal()
            }.start()
            done.wait()
        }
    }

    /// Two threads adding through one lock lose nothing.
    @Test func aLockLetsOneThreadAtATime() {
        let total = Lock(0)
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread {
                for _ in 0..<50_000 { total.withLock { $0 += 1 } }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(total.withLock { $0 } == 200_000)
        #expect(total.withLockIfAvailable { $0 } == 200_000)
    }
}
