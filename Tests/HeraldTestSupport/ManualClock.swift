public import Foundation
public import HeraldDomain
public import HeraldHTTP
import HeraldThreads
import Synchronization

/// A clock that stands still until a test moves it; due timers run, in order, on `advance`.
public final class ManualClock: DomainClock {
    private struct Timer {
        let id: Int
        let deadline: Date
        let work: @Sendable () -> Void
    }

    private struct State {
        var now: Date
        var timers: [Timer] = []
        var nextId = 0
        var cancelled: Set<Int> = []
    }

    private let state: Lock<State>
    private let start: Date
    /// Called after each firing (`afterEachFiring`).
    private let settles = Lock<[@Sendable () -> Void]>([])

    /// Calls `settle` after each timer that fires, before the next: a server whose changes run on a
    /// thread of their own (Herald's writer queues a firing) lets `advance` return once they ran.
    public func afterEachFiring(_ settle: @escaping @Sendable () -> Void) {
        settles.withLock { $0.append(settle) }
    }

    public init(now: Date = Date(timeIntervalSince1970: 1_444_396_193)) {
        state = Lock(State(now: now))
        start = now
    }

    public var now: Date { state.withLock { $0.now } }

    /// Timers scheduled and neither fired nor cancelled.
    public var pendingTimers: Int { state.withLock { $0.timers.count } }

    public func schedule(at deadline: Date, _ work: @escaping @Sendable () -> Void) -> any TimerHandle {
        state.withLock { state in
            state.nextId += 1
            state.timers.append(Timer(id: state.nextId, deadline: deadline, work: work))
            return Handle(id: state.nextId, clock: self)
        }
    }

    /// Moves time forward by `seconds`, running each timer that falls due at its own deadline.
    public func advance(by seconds: TimeInterval) {
        let target = now.addingTimeInterval(seconds)
        while true {
            let due: Timer? = state.withLock { state in
                guard let next = state.timers.filter({ $0.deadline <= target }).min(by: { $0.deadline < $1.deadline }) else { return nil }
                state.timers.removeAll { $0.id == next.id }
                state.now = max(state.now, next.deadline)
                return next
            }
            guard let due else { break }
            due.work()
            for settle in settles.withLock({ $0 }) { settle() }
        }
        state.withLock { $0.now = target }
    }

    fileprivate func cancel(_ id: Int) {
        state.withLock { $0.timers.removeAll { $0.id == id } }
    }

    private struct Handle: TimerHandle {
        let id: Int
        let clock: ManualClock
        func cancel() { clock.cancel(id) }
    }
}

/// The stream engine may follow the clock too: its heartbeats and tokens' ends come when a test advances it.
extension ManualClock: StreamClock {
    public var elapsed: Duration { reading.elapsed }
    public var date: Date { now }
    /// Both from one reading: `advance` runs on the test's thread while the engine reads.
    public var reading: (elapsed: Duration, date: Date) {
        let now = now
        return (.milliseconds(Int64((now.timeIntervalSince(start) * 1000).rounded())), now)
    }
}
