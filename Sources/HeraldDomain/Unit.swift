import HeraldJSON
import Synchronization

/// A unit of the data store: something with a name and a health status.
public struct Unit: Sendable, Equatable {
    public enum Status: String, Sendable, CaseIterable {
        case healthy, wounded, dead

        /// The face a view shows for the status.
        public var face: String {
            switch self {
            case .healthy: "🙂"
            case .wounded: "🤕"
            case .dead: "💀"
            }
        }
    }

    public let id: String
    public var name: String
    public var status: Status

    public var json: JSONValue {
        ["id": .string(id), "name": .string(name), "status": .string(status.rawValue), "face": .string(status.face)]
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
        sink.declareCollection(Self.collectionTopic, arrayName: "units")
    }

    public static let recordKind = "unit"

    /// Restores stored units.
    public func restore(_ records: [JSONValue]) throws(DomainError) {
        var restored: [String: Unit] = [:]
        for record in records {
            guard let id = record["id"]?.stringValue, let name = record["name"]?.stringValue,
                  let status = record["status"]?.stringValue.flatMap(Unit.Status.init(rawValue:))
            else { throw DomainError(.invalid, "a stored unit is unreadable: \(record.serialized.prefix(200))") }
            restored[id] = Unit(id: id, name: name, status: status)
        }
        units.withLock { units in
            units = restored
            sink.seed(restored.values.map { (Self.topic($0.id), ["unit": $0.json]) },
                      members: restored.values.map { Member(collection: Self.collectionTopic, key: $0.id, value: $0.json) })
        }
    }

    /// The units in id order whose id sorts after `after`, if given.
    public func units(after: String? = nil) -> [Unit] {
        units.withLock { units in
            Self.sorted(after.map { after in units.filter { $0.key > after } } ?? units)
        }
    }

    public func get(_ id: String) throws(DomainError) -> JSONValue {
        guard let unit = units.withLock({ $0[id] }) else { throw .notFound("unit", id) }
        return unit.json
    }

    public func exists(_ id: String) -> Bool { units.withLock { $0[id] != nil } }

    /// Creates or replaces a unit; `created` is true when it did not exist.
    public func put(id: String, json: JSONValue) throws(DomainError) -> (unit: JSONValue, created: Bool) {
        var reader = try FieldReader(json)
        if !Unit.isValidId(id) { reader.fail("id", "must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -") }
        let name = reader.string("name", length: 1...100)
        let statusName = reader.string("status")
        let status = statusName.flatMap(Unit.Status.init(rawValue:))
        if statusName != nil, status == nil { reader.fail("status", "must be one of healthy, wounded, dead") }
        try reader.finish()
        guard let name, let status else { throw DomainError(.invalid, "name and status are required") }
        let unit = Unit(id: id, name: name, status: status)
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        let created = units.withLock { $0[id] == nil }
        try sink.publish(Change(topic: Self.topic(id), event: "unit", payload: ["unit": unit.json, "created": .bool(created)],
                                values: [(Self.topic(id), ["unit": unit.json])],
                                members: [Member(collection: Self.collectionTopic, key: id, value: unit.json)],
                                records: [Record(kind: Self.recordKind, id: id, document: unit.json)]))
        units.withLock { $0[id] = unit }
        return (unit.json, created)
    }

    public func delete(_ id: String) throws(DomainError) {
        guard exists(id) else { throw .notFound("unit", id) }
        try sink.publish(Change(topic: Self.topic(id), event: "removed", payload: ["id": .string(id)],
                                values: [(Self.topic(id), nil)],
                                members: [Member(collection: Self.collectionTopic, key: id, value: nil)],
                                records: [Record(kind: Self.recordKind, id: id, document: nil)]))
        _ = units.withLock { $0.removeValue(forKey: id) }
    }

    private static func sorted(_ units: [String: Unit]) -> [Unit] { units.values.sorted { $0.id < $1.id } }
}
