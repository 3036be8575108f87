import Dispatch
import Foundation
import Synchronization

/// A scheduled piece of work that can be called off.
public protocol TimerHandle: Sendable {
    func cancel()
}

/// Time as the domain sees it: the current instant, and one-shot timers.
/// Production uses `SystemClock`; tests use a manual clock that they advance.
public protocol DomainClock: Sendable {
    var now: Date { get }
    /// Runs `work` once at `deadline` (or soon after), unless the handle is cancelled first.
    func schedule(at deadline: Date, _ work: @escaping @Sendable () -> Void) -> any TimerHandle
}

/// The wall clock, with timers on one shared dispatch queue: no thread per timer.
public final class SystemClock: DomainClock {
    private let queue = DispatchQueue(label: "herald.timers")

    public init() {}

    public var now: Date { Date() }

    public func schedule(at deadline: Date, _ work: @escaping @Sendable () -> Void) -> any TimerHandle {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let delay = max(deadline.timeIntervalSinceNow, 0)
        timer.schedule(deadline: .now() + .nanoseconds(Int(delay * 1e9)), leeway: .milliseconds(2))
        timer.setEventHandler(handler: work)
        timer.resume()
        return DispatchTimerHandle(timer: timer)
    }
}

/// Dispatch sources are thread-safe; `cancel()` may be called from any thread, any number of times.
private final class DispatchTimerHandle: TimerHandle, @unchecked Sendable {
    private let timer: any DispatchSourceTimer

    init(timer: any DispatchSourceTimer) { self.timer = timer }

    func cancel() { timer.cancel() }
}
