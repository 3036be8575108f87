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

    /// The clock goes forward, as `ContinuousClock` does over the same span.
    @Test func theClockGoesForward() {
        let (moment, instant) = (Moment.now, ContinuousClock.now)
        var spin = 0
        while ContinuousClock.now - instant < .milliseconds(5) { spin += 1 }
        let moved = moment.duration(to: .now)
        #expect(moved >= .milliseconds(5) && moved < .seconds(5), "\(moved) after \(spin) looks")
    }
}
