import Glibc

/// A reading of the continuous clock, in nanoseconds: what the request path and the connection table
/// keep of time. `ContinuousClock.Instant` belongs to a library built for evolution, so each reading,
/// copy and sum of one is a call through its type's witnesses (about 100 instructions a reading and 40
/// a copy); a request took four readings. This one is an integer.
struct Moment: Comparable, Sendable {
    let nanoseconds: Int64

    /// Now, from `CLOCK_BOOTTIME`: the clock `ContinuousClock` reads on Linux, so a `Moment` and an
    /// `Instant` advance alike (`MomentTests`).
    static var now: Moment {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Moment(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
    }

    static func < (a: Moment, b: Moment) -> Bool { a.nanoseconds < b.nanoseconds }

    /// `duration` later, in whole nanoseconds (saturating: a deadline past the clock's range is never).
    static func + (moment: Moment, duration: Duration) -> Moment {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return Moment(nanoseconds: seconds < 0 ? .min : .max) }
        let (sum, more) = moment.nanoseconds.addingReportingOverflow(scaled &+ attoseconds / 1_000_000_000)
        return more ? Moment(nanoseconds: seconds < 0 ? .min : .max) : Moment(nanoseconds: sum)
    }

    /// The time from `self` to `later`.
    func duration(to later: Moment) -> Duration { .nanoseconds(later.nanoseconds &- nanoseconds) }
}
