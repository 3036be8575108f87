import Foundation
import HeraldDomain
import HeraldTestSupport
import Testing

@Suite struct CountdownTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func restartSchedulesOneSecondAheadWithANewGeneration() {
        var countdown = Countdown(seconds: 3)
        #expect(!countdown.isRunning)
        #expect(countdown.restart(at: start) == .schedule(at: start + 1, generation: 1))
        #expect(countdown.remaining(at: start) == 3)
        #expect(countdown.restart(at: start + 0.5) == .schedule(at: start + 1.5, generation: 2))
        #expect(countdown.deadline == start + 3.5)
    }

    @Test func firesTicksThenExpires() {
        var countdown = Countdown(seconds: 3)
        _ = countdown.restart(at: start)
        #expect(countdown.fire(generation: 1, at: start + 1) == .tick(remaining: 2, next: start + 2, generation: 1))
        #expect(countdown.fire(generation: 1, at: start + 2) == .tick(remaining: 1, next: start + 3, generation: 1))
        #expect(countdown.fire(generation: 1, at: start + 3) == .expire)
        #expect(!countdown.isRunning)
        #expect(countdown.fire(generation: 1, at: start + 4) == .ignore)
    }

    @Test func aTimerFromBeforeARestartIsIgnored() {
        var countdown = Countdown(seconds: 3)
        _ = countdown.restart(at: start)
        _ = countdown.restart(at: start + 0.5)
        #expect(countdown.fire(generation: 1, at: start + 1) == .ignore)
        #expect(countdown.fire(generation: 2, at: start + 1.5) == .tick(remaining: 2, next: start + 2.5, generation: 2))
    }
}
