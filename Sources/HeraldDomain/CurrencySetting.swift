import HeraldThreads
import Synchronization

/// The default currency every screen follows.
public final class CurrencySetting: Sendable {
    public static let topic = "currency"

    private struct State {
        /// What the store holds: what readers see.
        var current: Currency
        /// The writer's batch's value, until it is durable.
        var staged: Currency?
    }

    private let state: Lock<State>
    private let initial: Currency
    private let sink: any ChangeSink

    public init(initial: Currency = .dollar, sink: any ChangeSink) {
        self.initial = initial
        self.state = Lock(State(current: initial))
        self.sink = sink
        sink.seed([.currency(initial)])
    }

    public var value: Currency { state.withLock { $0.current } }

    /// The currency as the change being made sees it (see `UnitStore.latest`); on the writer.
    public var latest: Currency { state.withLock { $0.staged ?? $0.current } }

    /// Restores the stored default; without one, the initial default.
    public func restore(_ stored: Currency?) {
        let restored = stored ?? initial
        state.withLock { $0.current = restored }
        sink.seed([.currency(restored)])
    }

    /// Sets the default; notifies only when it really changes.
    public func set(_ currency: Currency, in batch: ChangeBatch) throws(DomainError) {
        // Read, store unlocked, stage: changes come one at a time (see `ChangeSink`).
        let previous = state.withLock { $0.staged ?? $0.current }
        guard currency != previous else { return }
        try sink.publish(.currencyChanged(currency, previous: previous), in: batch)
        let first = state.withLock { state in
            defer { state.staged = currency }
            return state.staged == nil
        }
        guard first else { return }
        // Memory takes it once it is durable; a lost batch leaves it as it was.
        sink.whenBatchEnds(in: batch) { [weak self] durable in
            self?.state.withLock { state in
                if durable, let staged = state.staged { state.current = staged }
                state.staged = nil
            }
        }
    }
}
