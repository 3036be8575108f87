import Synchronization

/// The default currency every screen follows.
public final class CurrencySetting: Sendable {
    public static let topic = "currency"
    private let current: Mutex<Currency>
    private let initial: Currency
    private let sink: any ChangeSink

    public init(initial: Currency = .dollar, sink: any ChangeSink) {
        self.initial = initial
        self.current = Mutex(initial)
        self.sink = sink
        sink.seed([.currency(initial)])
    }

    public var value: Currency { current.withLock { $0 } }

    /// Restores the stored default; without one, the initial default.
    public func restore(_ stored: Currency?) {
        let restored = stored ?? initial
        current.withLock { $0 = restored }
        sink.seed([.currency(restored)])
    }

    /// Sets the default; notifies only when it really changes.
    public func set(_ currency: Currency) throws(DomainError) {
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        let previous = value
        guard currency != previous else { return }
        try sink.publish(.currencyChanged(currency, previous: previous))
        current.withLock { $0 = currency }
    }
}
