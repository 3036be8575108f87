public import Foundation

/// The stream engine's time: how far it has come (heartbeats, its once-a-second tick, the seconds
/// tokens are filed by) and the date a token's `exp` is compared with. Herald's is the system's; a
/// test gives one that moves when it says, so heartbeats and expiry are tested without waiting.
public protocol StreamClock: Sendable {
    /// Time since any fixed point; it never goes back.
    var elapsed: Duration { get }
    /// Now, as a date.
    var date: Date { get }
    /// Both at one moment. A clock that another thread moves in steps (a test's) must read them at
    /// once: read apart, a step between the two put a token's end in the wrong second.
    var reading: (elapsed: Duration, date: Date) { get }
}

extension StreamClock {
    public var reading: (elapsed: Duration, date: Date) { (elapsed, date) }
}

/// The system's time: monotonic for `elapsed`, the wall clock for `date`.
public struct SystemStreamClock: StreamClock {
    private let start = ContinuousClock.now

    public init() {}

    public var elapsed: Duration { start.duration(to: .now) }
    public var date: Date { Date() }
}
