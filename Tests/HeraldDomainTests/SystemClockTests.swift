import Dispatch
import Foundation
import HeraldDomain
import HeraldThreads
import Testing

/// The real clock's timers (`herald-timers`). Every wait below is a bound on a hang, not a speed: each
/// test passes as soon as its timers ran, in whatever time a busy machine takes.
@Suite struct SystemClockTests {
    let clock = SystemClock()

    /// Waits for `count` signals of `done`, each within a minute.
    private func wait(for count: Int, on done: DispatchSemaphore) -> Bool {
        (0..<count).allSatisfy { _ in done.wait(timeout: .now() + 60) == .success }
    }

    @Test func timersRunInTheOrderTheyFallDueNotTheOrderScheduled() {
        let ran = Lock<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        let base = Date()
        let offsets = [0.3, 0.1, 0.25, 0.15, 0]
        for (index, offset) in offsets.enumerated() {
            _ = clock.schedule(at: base.addingTimeInterval(offset)) {
                ran.withLock { $0.append(index) }
                done.signal()
            }
        }
        #expect(wait(for: offsets.count, on: done))
        #expect(ran.withLock { $0 } == [4, 1, 3, 2, 0])
    }

    @Test func aCancelledTimerNeverRuns() {
        let ran = Lock<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let cancelled = clock.schedule(at: Date().addingTimeInterval(0.1)) { ran.withLock { $0.append("cancelled") } }
        cancelled.cancel()
        cancelled.cancel()
        _ = clock.schedule(at: Date().addingTimeInterval(0.3)) {
            ran.withLock { $0.append("kept") }
            done.signal()
        }
        #expect(wait(for: 1, on: done))
        #expect(ran.withLock { $0 } == ["kept"])
    }

    /// The thread waits for the earliest timer; one scheduled earlier still must wake it. Had it slept
    /// on until the first (an hour away), the wait below would end without the second having run.
    @Test func aTimerThatFallsDueBeforeTheOneAwaitedWakesTheThread() {
        let done = DispatchSemaphore(value: 0)
        let later = clock.schedule(at: Date().addingTimeInterval(3600)) {}
        _ = clock.schedule(at: Date().addingTimeInterval(0.05)) { done.signal() }
        #expect(wait(for: 1, on: done))
        later.cancel()
    }

    @Test func aDeadlinePastRunsAtOnceAndOneFarAwayIsKeptWithoutOverflow() {
        let done = DispatchSemaphore(value: 0)
        let never = clock.schedule(at: .distantFuture) { Issue.record("a timer in the distant future ran") }
        _ = clock.schedule(at: .distantPast) { done.signal() }
        #expect(wait(for: 1, on: done))
        never.cancel()
    }

    /// Work may schedule and cancel timers itself (an auction's tick schedules the next one).
    @Test func workMayScheduleTheNextTimer() {
        let done = DispatchSemaphore(value: 0)
        let clock = self.clock
        _ = clock.schedule(at: Date()) {
            _ = clock.schedule(at: Date().addingTimeInterval(0.05)) { done.signal() }
        }
        #expect(wait(for: 1, on: done))
    }
}
