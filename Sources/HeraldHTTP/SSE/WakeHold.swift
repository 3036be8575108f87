public import HeraldThreads
import Synchronization

/// One thread's hold on its wake-ups of the stream engine: the writer holds them while it finishes a
/// batch and answers its clients, the request thread while it answers a request. A wake-up asked for
/// on the owning thread during a hold (`StreamEngine.signal(unlessHeldBy:)`) is only noted, and
/// `StreamEngine.release(_:)` sends it: on a shared core the clients are answered first, and fan-out
/// starts after. A wake-up from any other thread goes out at once.
public final class WakeHold: Sendable {
    /// The thread whose wake-ups this holds.
    public let owner: OwnerThread
    /// Whether a hold is on, and the engine's loops whose wake-up was kept, a bit each. Only the
    /// owner's thread touches them (checked in every build): atomics with relaxed order, plain loads and
    /// stores, for the two looks of every request (a `ThreadBound` cost two exclusivity checks each).
    private let holding = Atomic<Bool>(false)
    private let wanted = Atomic<UInt64>(0)

    public init(owner: OwnerThread) {
        self.owner = owner
    }

    /// Holds the owner's wake-ups until `StreamEngine.release(_:)`. On the owner's thread.
    public func begin() {
        precondition(owner.mayAccess, "the wake-up hold of \(owner.name) begun on another thread")
        holding.store(true, ordering: .relaxed)
    }

    /// Whether a wake-up of the engine's loop `loop` (0 to 63) asked for now is kept for later: on
    /// the owner's thread, during a hold.
    func keep(_ loop: Int) -> Bool {
        guard owner.isCurrent, holding.load(ordering: .relaxed) else { return false }
        wanted.store(wanted.load(ordering: .relaxed) | 1 << UInt64(loop & 63), ordering: .relaxed)
        return true
    }

    /// Ends the hold, and gives the loops whose wake-up was kept, a bit each (the caller sends them).
    /// On the owner's thread.
    func end() -> UInt64 {
        precondition(owner.mayAccess, "the wake-up hold of \(owner.name) ended on another thread")
        holding.store(false, ordering: .relaxed)
        let kept = wanted.load(ordering: .relaxed)
        if kept != 0 { wanted.store(0, ordering: .relaxed) }
        return kept
    }
}
