import Dispatch
public import Foundation

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
