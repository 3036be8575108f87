import Dispatch
public import Foundation
import HeraldThreads

/// The wall clock, with timers on one thread of their own (`herald-timers`), shared by every clock in
/// the process: no thread per timer, and no dispatch queue.
///
/// A dispatch source per timer (as before) woke libdispatch's timer threads, which run above ordinary
/// threads, twice for every bid: the old countdown's cancel and the new one's schedule. The writer lost
/// the core to them in the middle of its batch, and on a busy core did not always get it back at once
/// (`git show dad6eb7:BENCHMARKS.md`, "Lobbies and catch-up"). Here a timer is an entry in a heap under a lock: a cancel
/// only marks it, and a schedule wakes the thread only when its entry is the earliest. A bid restarts
/// its auction's countdown a second ahead, which is behind the earliest of any other ticking auction,
/// so a bid wakes nothing.
public final class SystemClock: DomainClock {
    public init() {}

    public var now: Date { Date() }

    public func schedule(at deadline: Date, _ work: @escaping @Sendable () -> Void) -> any TimerHandle {
        TimerThread.shared.schedule(in: deadline.timeIntervalSinceNow, work)
    }
}

/// The thread that runs every `SystemClock`'s timers, in the order they fall due (those due at the
/// same time in the order scheduled), one at a time. It starts with the first timer and then waits
/// for the earliest one, or for a new one that falls due earlier.
final class TimerThread: Sendable {
    static let shared = TimerThread()

    private struct Entry {
        /// `DispatchTime`'s uptime, in nanoseconds.
        let due: UInt64
        /// Breaks ties: the order scheduled.
        let order: UInt64
        let timer: Timer
    }

    private struct State {
        /// A binary min-heap of `(due, order)`; cancelled entries stay until they fall due.
        var heap: [Entry] = []
        var scheduled: UInt64 = 0
        /// When the thread wakes next unless signalled (`.max`: only when signalled).
        var waitingUntil = UInt64.max
        var started = false
    }

    private let state = Lock(State())
    private let wake = DispatchSemaphore(value: 0)
    /// How late the thread may run a timer, so that one wake-up runs every timer due within it. Each bid
    /// cancels its auction's countdown and schedules another a second ahead, and the cancelled entries
    /// fall due a second later, as often as the bids came: the thread woke for each of them (a
    /// replica taking in 5,000 bids a second spent a twentieth of its CPU there).
    static let slack: UInt64 = 2_000_000

    /// Runs `work` on the thread once `seconds` from now have passed (at once if none are left).
    func schedule(in seconds: TimeInterval, _ work: @escaping @Sendable () -> Void) -> Timer {
        // Beyond about three years a timer is as good as never (and the nanoseconds stay in range).
        let delay = seconds.isNaN ? 0 : min(max(seconds, 0), 1e8)
        let due = DispatchTime.now().uptimeNanoseconds &+ UInt64(delay * 1e9)
        let timer = Timer(work)
        let (signal, start) = state.withLock { state -> (Bool, Bool) in
            state.scheduled += 1
            Self.push(Entry(due: due, order: state.scheduled, timer: timer), onto: &state.heap)
            let start = !state.started
            state.started = true
            guard due < state.waitingUntil else { return (false, start) }
            state.waitingUntil = due
            return (true, start)
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "herald-timers"
            thread.start()
        }
        if signal { wake.signal() }
        return timer
    }

    private func run() {
        OwnerThread(name: "herald-timers").bindToCurrentThread()
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let (due, until) = state.withLock { state -> ([Timer], UInt64) in
                var due: [Timer] = []
                while let first = state.heap.first, first.due <= now { due.append(Self.popFirst(from: &state.heap).timer) }
                state.waitingUntil = state.heap.first?.due ?? .max
                return (due, state.waitingUntil)
            }
            for timer in due { timer.fire() }
            if until == .max {
                wake.wait()
            } else {
                _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: until &+ Self.slack))
            }
        }
    }

    /// Whether the heap's entry at `a` falls due before the one at `b`: read in place, where copying
    /// the two entries retained and released their timers at every step of every push and pop.
    private static func precedes(_ a: Int, _ b: Int, in heap: borrowing [Entry]) -> Bool {
        heap[a].due != heap[b].due ? heap[a].due < heap[b].due : heap[a].order < heap[b].order
    }

    private static func push(_ entry: Entry, onto heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent, in: heap) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popFirst(from heap: inout [Entry]) -> Entry {
        let first = heap[0]
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < heap.count, precedes(left, least, in: heap) { least = left }
            if right < heap.count, precedes(right, least, in: heap) { least = right }
            guard least != parent else { return first }
            heap.swapAt(parent, least)
            parent = least
        }
    }

    /// One scheduled run of a piece of work: cancelling drops the work at once (its entry stays in
    /// the heap, empty, until it falls due). Any thread, any number of times.
    final class Timer: TimerHandle, Sendable {
        private let work: Lock<(@Sendable () -> Void)?>

        init(_ work: @escaping @Sendable () -> Void) { self.work = Lock(work) }

        func cancel() { work.withLock { $0 = nil } }

        /// Runs the work unless it was cancelled; a timer runs at most once.
        fileprivate func fire() {
            let work = self.work.withLock { work in
                defer { work = nil }
                return work
            }
            work?()
        }
    }
}
