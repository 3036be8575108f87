import Synchronization

/// A unit of the data store: something with a name and a health status.
public struct Unit: Sendable, Equatable {
    public enum Status: String, Sendable, CaseIterable {
        case healthy, wounded, dead
    }

    public let id: String
    public var name: String
    public var status: Status

    public init(id: String, name: String, status: Status) {
        self.id = id
        self.name = name
        self.status = status
    }

    /// Whether `id` is 1–64 characters of letters, digits, `_` and `-`.
    public static func isValidId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }
}

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
            units = Dictionary(restored.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            sink.seed(restored.map { .unit($0) })
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
