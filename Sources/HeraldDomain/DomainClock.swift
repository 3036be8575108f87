public import Foundation

/// Time as the domain sees it: the current instant, and one-shot timers.
/// Production uses `SystemClock`; tests use a manual clock that they advance.
public protocol DomainClock: Sendable {
    var now: Date { get }
    /// Runs `work` once at `deadline` (or soon after), unless the handle is cancelled first.
    func schedule(at deadline: Date, _ work: @escaping @Sendable () -> Void) -> any TimerHandle
}
