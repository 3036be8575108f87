public import HeraldThreads

/// One thread's hold on its wake-ups of the stream engine: the writer holds them while it finishes a
/// batch and answers its clients, the request thread while it answers a request. A wake-up asked for
/// on the owning thread during a hold (`StreamEngine.signal(unlessHeldBy:)`) is only noted, and
/// `StreamEngine.release(_:)` sends it: on a shared core the clients are answered first, and fan-out
/// starts after. A wake-up from any other thread goes out at once.
public final class WakeHold: Sendable {
    private struct State {
        var holding = false
        /// The engine's loops whose wake-up was kept, a bit each.
        var wanted: UInt64 = 0
    }

    /// The thread whose wake-ups this holds.
    public let owner: OwnerThread
    private let state: ThreadBound<State>

    public init(owner: OwnerThread) {
        self.owner = owner
        state = ThreadBound(State(), owner: owner)
    }

    /// Holds the owner's wake-ups until `StreamEngine.release(_:)`. On the owner's thread.
    public func begin() { state.withValue { $0.holding = true } }

    /// Whether a wake-up of the engine's loop `loop` (0 to 63) asked for now is kept for later: on
    /// the owner's thread, during a hold.
    func keep(_ loop: Int) -> Bool {
        guard owner.isCurrent else { return false }
        return state.withValue { state in
            guard state.holding else { return false }
            state.wanted |= 1 << UInt64(loop & 63)
            return true
        }
    }

    /// Ends the hold, and gives the loops whose wake-up was kept, a bit each (the caller sends them).
    func end() -> UInt64 {
        state.withValue { state in
            defer { state = State() }
            return state.wanted
        }
    }
}
