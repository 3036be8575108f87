import HeraldThreads
import Synchronization

/// A record of a subject kind that holds one record per id, as the units do: what the domain needs
/// of it. Herald's registry (`KeyedKind`) declares the rest: its JSON, its filters, its routes.
public protocol KeyedRecord: Sendable, Equatable {
    /// The kind's collection topic (`units`): its records are `units/{id}`.
    static var collection: String { get }
    /// What one record is called in errors and in the store (`unit`).
    static var noun: String { get }
    var id: String { get }
}

extension KeyedRecord {
    /// A record's topic (`units/scout`).
    public static func topic(_ id: String) -> String { collection + "/" + id }

    /// Whether `id` may name a record: 1–64 characters of letters, digits, `_` and `-`.
    public static func isValidId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }
}

/// What the server does with every keyed store, whatever its record: put it back together from the
/// store, take in what another replica changed, and say whether a record is there.
public protocol KeyedSubject: AnyObject, Sendable {
    /// Stored records; they replace every record in memory.
    func restore(_ records: [any KeyedRecord])
    /// Records another Herald changed or removed (a replica catching up); the others stay.
    func merge(_ changed: [any KeyedRecord], removed: [String])
    func exists(_ id: String) -> Bool
}

/// The records of one keyed kind, by id. An observer of `units/{id}` sees only that record; one of
/// `units` sees them all.
public final class KeyedStore<Record: KeyedRecord>: KeyedSubject {
    public static var collectionTopic: String { Record.collection }
    public static func topic(_ id: String) -> String { Record.topic(id) }

    private struct State {
        /// What the store holds: what readers see.
        var records: [String: Record] = [:]
        /// The writer's batch, until it is durable.
        var staged = Staged<String, Record>()

        /// The record as the change being made sees it.
        func current(_ id: String) -> Record? { staged.value(of: id, over: records) }
    }

    private let state = Lock(State())
    private let sink: any ChangeSink

    public init(sink: any ChangeSink) {
        self.sink = sink
    }

    public func restore(_ restored: [any KeyedRecord]) {
        let restored = restored.compactMap { $0 as? Record }
        state.withLock { state in
            let vanished = Set(state.records.keys).subtracting(restored.map(\.id))
            state.records = Dictionary(restored.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            sink.seed(restored.map { .record($0) } + vanished.sorted().map { .recordRemoved(collection: Record.collection, id: $0) })
        }
    }

    public func merge(_ changed: [any KeyedRecord], removed: [String]) {
        let changed = changed.compactMap { $0 as? Record }
        state.withLock { state in
            for id in removed { state.records[id] = nil }
            for record in changed { state.records[record.id] = record }
            sink.seed(removed.map { .recordRemoved(collection: Record.collection, id: $0) } + changed.map { .record($0) })
        }
    }

    /// The records in id order whose id sorts after `after`, if given.
    public func records(after: String? = nil) -> [Record] {
        state.withLock { state in
            (after.map { after in state.records.filter { $0.key > after } } ?? state.records).values.sorted { $0.id < $1.id }
        }
    }

    public func get(_ id: String) throws(DomainError) -> Record {
        guard let record = state.withLock({ $0.records[id] }) else { throw .notFound(Record.noun, id) }
        return record
    }

    public func exists(_ id: String) -> Bool { state.withLock { $0.records[id] != nil } }

    /// The record as the change being made sees it: the writer's batch so far over what readers see.
    /// On the writer, where a conditional change compares it with the version it was asked for.
    public func latest(_ id: String) -> Record? { state.withLock { $0.current(id) } }

    /// Creates or replaces a record; returns true when it did not exist.
    public func put(_ record: Record, in batch: ChangeBatch) throws(DomainError) -> Bool {
        guard Record.isValidId(record.id) else {
            throw DomainError(.invalid, "invalid \(Record.noun) id",
                              fields: [FieldError(field: "id", message: "must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -")])
        }
        // Read, store unlocked, stage: changes come one at a time (see `ChangeSink`).
        let previous = state.withLock { $0.current(record.id) }
        try sink.publish(.recordSaved(record, previous: previous), in: batch)
        stage(record, for: record.id, in: batch)
        return previous == nil
    }

    public func delete(_ id: String, in batch: ChangeBatch) throws(DomainError) {
        guard let previous = state.withLock({ $0.current(id) }) else { throw .notFound(Record.noun, id) }
        try sink.publish(.recordRemoved(previous), in: batch)
        stage(nil, for: id, in: batch)
    }

    /// Stages a change (nil: a removal); the batch's first asks to hear when the batch ends.
    private func stage(_ record: Record?, for id: String, in batch: ChangeBatch) {
        if state.withLock({ $0.staged.stage(record, for: id) }) { sink.whenBatchEnds(in: batch) { [weak self] durable in self?.batchEnded(durable: durable) } }
    }

    /// Memory takes the batch's changes once they are durable; a lost batch leaves it as it was.
    private func batchEnded(durable: Bool) {
        state.withLock { state in
            for (id, record) in state.staged.take().values where durable { state.records[id] = record }
        }
    }
}

/// The unit store: records of `Unit`.
public typealias UnitStore = KeyedStore<Unit>
