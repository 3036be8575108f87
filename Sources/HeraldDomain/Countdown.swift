public import Foundation

/// An auction's countdown as a pure state machine: it holds a deadline and tells its driver what to
/// schedule. Each restart makes a new generation, so a timer from an older one is ignored: with the
/// driver cancelling the old timer on every restart, an auction never has two live timers.
public struct Countdown: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Schedule the next firing at `at`, carrying `generation`.
        case schedule(at: Date, generation: UInt64)
        /// Publish a tick with `remaining` seconds, then schedule the next firing.
        case tick(remaining: Int, next: Date, generation: UInt64)
        /// Time is up: close the auction.
        case expire
        /// A stale timer fired: do nothing.
        case ignore
    }

    /// The length of the countdown in seconds.
    public let seconds: Int
    /// When the countdown reaches zero; nil while not running.
    public private(set) var deadline: Date?
    /// Increased on every restart and on expiry.
    public private(set) var generation: UInt64 = 0

    public init(seconds: Int, deadline: Date? = nil) {
        self.seconds = seconds
        self.deadline = deadline
    }

    public var isRunning: Bool { deadline != nil }

    /// Whole seconds left at `now` (rounded to the nearest), or nil when not running.
    public func remaining(at now: Date) -> Int? {
        deadline.map { max(0, Int(($0.timeIntervalSince(now)).rounded())) }
    }

    /// Starts or restarts the countdown at full length.
    public mutating func restart(at now: Date) -> Action {
        generation += 1
        let deadline = now.addingTimeInterval(TimeInterval(seconds))
        self.deadline = deadline
        return .schedule(at: nextFiring(remaining: seconds, deadline: deadline), generation: generation)
    }

    /// Continues a countdown restored with its deadline: the next firing, or `.expire` if the deadline
    /// passed while nothing was running.
    public mutating func resume(at now: Date) -> Action {
        guard let deadline, let remaining = remaining(at: now) else { return .ignore }
        generation += 1
        if remaining <= 0 {
            self.deadline = nil
            return .expire
        }
        return .schedule(at: nextFiring(remaining: remaining, deadline: deadline), generation: generation)
    }

    /// A timer of `generation` fired at `now`.
    public mutating func fire(generation: UInt64, at now: Date) -> Action {
        guard generation == self.generation, let deadline, let remaining = remaining(at: now) else { return .ignore }
        if remaining <= 0 {
            self.deadline = nil
            self.generation += 1
            return .expire
        }
        return .tick(remaining: remaining, next: nextFiring(remaining: remaining, deadline: deadline), generation: generation)
    }

    /// The next whole second of the countdown: when `remaining - 1` seconds are left.
    private func nextFiring(remaining: Int, deadline: Date) -> Date {
        deadline.addingTimeInterval(-TimeInterval(remaining - 1))
    }
}
