import HeraldJSON
import Synchronization

/// The currencies a screen can show amounts in.
public enum Currency: String, Sendable, CaseIterable {
    case dollar, euro, turkishLira, gramGold
}

/// The default currency every screen follows.
public final class CurrencySetting: Sendable {
    public static let topic = "currency"
    private let current: Mutex<Currency>
    private let sink: any ChangeSink

    private let initial: Currency

    public init(initial: Currency = .dollar, sink: any ChangeSink) {
        self.initial = initial
        self.current = Mutex(initial)
        self.sink = sink
        sink.seed([(Self.topic, Self.json(initial))])
    }

    public var value: Currency { current.withLock { $0 } }

    public static let recordKind = "currency"

    /// Restores the stored default; without one, the initial default.
    public func restore(_ records: [JSONValue]) {
        let stored = records.first?["default"]?.stringValue.flatMap(Currency.init(rawValue:)) ?? initial
        current.withLock { $0 = stored }
        sink.seed([(Self.topic, Self.json(stored))])
    }

    public static func json(_ currency: Currency) -> JSONValue {
        ["default": .string(currency.rawValue), "available": .array(Currency.allCases.map { .string($0.rawValue) })]
    }

    public func get() -> JSONValue { Self.json(value) }

    /// Sets the default; notifies only when it really changes.
    public func set(json: JSONValue) throws(DomainError) -> JSONValue {
        var reader = try FieldReader(json)
        let name = reader.string("default")
        let allowed = Currency.allCases.map(\.rawValue).joined(separator: ", ")
        if let name, Currency(rawValue: name) == nil { reader.fail("default", "must be one of \(allowed)") }
        try reader.finish()
        guard let name, let currency = Currency(rawValue: name) else { throw DomainError(.invalid, "default must be one of \(allowed)") }
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        let previous = value
        if currency != previous {
            try sink.publish(Change(topic: Self.topic, event: "currency",
                                    payload: ["default": .string(currency.rawValue), "previous": .string(previous.rawValue)],
                                    values: [(Self.topic, Self.json(currency))],
                                    records: [Record(kind: Self.recordKind, id: "default", document: ["default": .string(currency.rawValue)])]))
            current.withLock { $0 = currency }
        }
        return Self.json(currency)
    }
}
