import Synchronization

/// The unit store. An observer of `units/{id}` sees only that unit; one of `units` sees them all.
public final class UnitStore: Sendable {
    public static let collectionTopic = "units"
    public static func topic(_ id: String) -> String { "units/\(id)" }

    private let units = Mutex<[String: Unit]>([:])
    private let sink: any ChangeSink

    public init(sink: any ChangeSink) {
        self.sink = sink
    }

    /// Restores stored units; they replace every unit in memory.
    public func restore(_ restored: [Unit]) {
        units.withLock { units in
            let vanished = Set(units.keys).subtracting(restored.map(\.id))
            units = Dictionary(restored.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            sink.seed(restored.map { .unit($0) } + vanished.sorted().map { .unitRemoved(id: $0) })
        }
    }

    /// Takes in units another Herald changed or removed (a replica catching up); the others stay.
    public func merge(_ changed: [Unit], removed: [String]) {
        units.withLock { units in
            for id in removed { units[id] = nil }
            for unit in changed { units[unit.id] = unit }
            sink.seed(removed.map { .unitRemoved(id: $0) } + changed.map { .unit($0) })
        }
    }

    /// The units in id order whose id sorts after `after`, if given.
    public func units(after: String? = nil) -> [Unit] {
        units.withLock { units in
            Self.sorted(after.map { after in units.filter { $0.key > after } } ?? units)
        }
    }

    public func get(_ id: String) throws(DomainError) -> Unit {
        guard let unit = units.withLock({ $0[id] }) else { throw .notFound("unit", id) }
        return unit
    }

    public func exists(_ id: String) -> Bool { units.withLock { $0[id] != nil } }

    /// Creates or replaces a unit; returns true when it did not exist.
    public func put(_ unit: Unit) throws(DomainError) -> Bool {
        guard Unit.isValidId(unit.id) else {
            throw DomainError(.invalid, "invalid unit id", fields: [FieldError(field: "id", message: "must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -")])
        }
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        let created = units.withLock { $0[unit.id] == nil }
        try sink.publish(.unitSaved(unit, created: created))
        units.withLock { $0[unit.id] = unit }
        return created
    }

    public func delete(_ id: String) throws(DomainError) {
        guard exists(id) else { throw .notFound("unit", id) }
        try sink.publish(.unitRemoved(id: id))
        _ = units.withLock { $0.removeValue(forKey: id) }
    }

    private static func sorted(_ units: [String: Unit]) -> [Unit] { units.values.sorted { $0.id < $1.id } }
}
