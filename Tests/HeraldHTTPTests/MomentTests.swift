@testable import HeraldHTTP
import Testing

@Suite struct MomentTests {
    /// A moment plus a duration is that many nanoseconds later (sub-nanoseconds dropped), the duration
    /// between two moments is their difference, and a sum past the clock's range saturates, so a
    /// deadline that far away is never reached rather than in the past.
    @Test func momentsAddAndSubtractDurations() {
        let start = Moment(nanoseconds: 5_000)
        #expect((start + .seconds(2)).nanoseconds == 2_000_005_000)
        #expect((start + .milliseconds(-1)).nanoseconds == -995_000)
        #expect((start + .nanoseconds(1) / 2).nanoseconds == 5_000)
        #expect(start.duration(to: start + .milliseconds(1_500)) == .milliseconds(1_500))
        #expect((start + .seconds(Int64.max / 2)).nanoseconds == .max)
        #expect((Moment(nanoseconds: .max - 10) + .nanoseconds(11)).nanoseconds == .max)
        #expect((start + .seconds(Int64.min / 2)).nanoseconds == .min)
        #expect(start < start + .nanoseconds(1) && !(start < start))
    }

    /// The clock counts nanoseconds at `ContinuousClock`'s rate: a span of moments lies between the
    /// clock's span read inside it and the one read around it (an order of readings, no time bound).
    @Test func theClockGoesForwardAtTheContinuousClocksRate() {
        let outerStart = ContinuousClock.now
        let start = Moment.now
        let innerStart = ContinuousClock.now
        while ContinuousClock.now - innerStart < .milliseconds(5) {}
        let innerEnd = ContinuousClock.now
        let end = Moment.now
        let outerEnd = ContinuousClock.now
        let moved = start.duration(to: end)
        #expect(innerEnd - innerStart <= moved && moved <= outerEnd - outerStart, "\(moved)")
        #expect(moved >= .milliseconds(5))
    }
}
