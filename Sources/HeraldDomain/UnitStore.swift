import HeraldThreads
import Synchronization

/// The unit store. An observer of `units/{id}` sees only that unit; one of `units` sees them all.
public final class UnitStore: Sendable {
    public static let collectionTopic = "units"
    public static func topic(_ id: String) -> String { "units/\(id)" }

    private struct State {
        /// What the store holds: what readers see.
        var units: [String: Unit] = [:]
        /// The writer's batch, until it is durable.
        var staged = Staged<String, Unit>()

        /// The unit as the change being made sees it.
        func current(_ id: String) -> Unit? { staged.value(of: id, over: units) }
    }

    private let state = Lock(State())
    private let sink: any ChangeSink

    public init(sink: any ChangeSink) {
        self.sink = sink
    }

    /// Restores stored units; they replace every unit in memory.
    public func restore(_ restored: [Unit]) {
        state.withLock { state in
            let units = state.units
            let vanished = Set(units.keys).subtracting(restored.map(\.id))
            state.units = Dictionary(restored.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            sink.seed(restored.map { .unit($0) } + vanished.sorted().map { .unitRemoved(id: $0) })
        }
    }

    /// Takes in units another Herald changed or removed (a replica catching up); the others stay.
    public func merge(_ changed: [Unit], removed: [String]) {
        state.withLock { state in
            for id in removed { state.units[id] = nil }
            for unit in changed { state.units[unit.id] = unit }
            sink.seed(removed.map { .unitRemoved(id: $0) } + changed.map { .unit($0) })
        }
    }

    /// The units in id order whose id sorts after `after`, if given.
    public func units(after: String? = nil) -> [Unit] {
        state.withLock { state in
            Self.sorted(after.map { after in state.units.filter { $0.key > after } } ?? state.units)
        }
    }

    public func get(_ id: String) throws(DomainError) -> Unit {
        guard let unit = state.withLock({ $0.units[id] }) else { throw .notFound("unit", id) }
        return unit
    }

    public func exists(_ id: String) -> Bool { state.withLock { $0.units[id] != nil } }

    /// The unit as the change being made sees it: the writer's batch so far over what readers see.
    /// On the writer, where a conditional change compares it with the version it was asked for.
    public func latest(_ id: String) -> Unit? { state.withLock { $0.current(id) } }

    /// Creates or replaces a unit; returns true when it did not exist.
    public func put(_ unit: Unit) throws(DomainError) -> Bool {
        guard Unit.isValidId(unit.id) else {
            throw DomainError(.invalid, "invalid unit id", fields: [FieldError(field: "id", message: "must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -")])
        }
        // Read, store unlocked, stage: changes come one at a time (see `ChangeSink`).
        let previous = state.withLock { $0.current(unit.id) }
        try sink.publish(.unitSaved(unit, previous: previous))
        stage(unit, for: unit.id)
        return previous == nil
    }

    public func delete(_ id: String) throws(DomainError) {
        guard let previous = state.withLock({ $0.current(id) }) else { throw .notFound("unit", id) }
        try sink.publish(.unitRemoved(previous))
        stage(nil, for: id)
    }

    /// Stages a change (nil: a removal); the batch's first asks to hear when the batch ends.
    private func stage(_ unit: Unit?, for id: String) {
        if state.withLock({ $0.staged.stage(unit, for: id) }) { sink.whenBatchEnds { [weak self] durable in self?.batchEnded(durable: durable) } }
    }

    /// Memory takes the batch's changes once they are durable; a lost batch leaves it as it was.
    private func batchEnded(durable: Bool) {
        state.withLock { state in
            for (id, unit) in state.staged.take().values where durable { state.units[id] = unit }
        }
    }

    private static func sorted(_ units: [String: Unit]) -> [Unit] { units.values.sorted { $0.id < $1.id } }
}
