import HeraldCore
import HeraldDomain
import HeraldJSON

/// A keyed subject kind (one record per id, as the units), declared once: what clients see of a
/// record, what the store keeps and reads back, what the collection is filtered by, which fields
/// `?fields=` may follow, and its routes. Listed in `Registry.keyed`, it is served with no other
/// change: the topic parser, the access check, the journal, the restore, the hub's collections and
/// the metrics read the registry. `CollectionRegistryTests` checks what the compiler cannot.
protocol KeyedKind: Sendable {
    associatedtype Record: KeyedRecord
    /// The event a record's change comes as, on its topic and its collection; the payload holds the
    /// record under the same name (`{"unit":{…},"created":true}`), and a snapshot the same.
    static var itemEvent: EventName { get }
    /// The fields the collection may be filtered by, each with the values it takes
    /// (`/units/events?status=dead`), and a record's values of them.
    static var filters: [String: [String]] { get }
    static func filterValues(_ record: Record) -> [FilterValue]
    /// The fields `?fields=` may follow, and those among them in which two versions of a record differ.
    static var fields: Set<String> { get }
    static func changed(_ record: Record, from previous: Record) -> [String]
    /// The record as clients see it, which is also what the store keeps; `record(document:)` reads
    /// it back (nil: unreadable).
    static func json(_ record: Record) -> JSONValue
    static func record(document: JSONValue) -> Record?
    /// A body that its `PUT /{collection}/{id}` takes: the registry's test makes a record with it.
    static var example: String { get }
    static func addRoutes(_ routes: inout Routes, store: KeyedStore<Record>, events: EventRoutes)
}

extension KeyedKind {
    static var collection: String { Record.collection }
    /// What the store calls one record (`unit`).
    static var noun: String { Record.noun }
    static func isValidId(_ id: String) -> Bool { Record.isValidId(id) }

    /// What the hub, the routes' filters and `fields=` read of the kind.
    static var collectionKind: CollectionKind {
        CollectionKind(topic: collection, itemEvent: itemEvent, filterFields: filters,
                       changedFields: ChangedFields(name: collection, fields: fields, events: [itemEvent]))
    }

    static func makeStore(sink: any ChangeSink) -> any KeyedSubject { KeyedStore<Record>(sink: sink) }

    static func addRoutes(_ routes: inout Routes, from subjects: Subjects, events: EventRoutes) {
        guard let store = subjects.store(self) else { return }
        addRoutes(&routes, store: store, events: events)
    }

    /// A stored record read back.
    static func read(document: JSONValue) -> (any KeyedRecord)? { record(document: document) }

    /// A record saved, as the journal publishes and stores it: its JSON written once, and copied into
    /// the event, the record's current value, its collection's member and the stored record. Nil when
    /// the record is not of this kind.
    static func saved(_ saved: any KeyedRecord, previous: (any KeyedRecord)?) -> Journal.Entry? {
        guard let record = saved as? Record else { return nil }
        let previous = previous as? Record
        let topic = Record.topic(record.id), bytes = json(record).bytes, value = JSONValue.encoded(bytes)
        return Journal.Entry(topic: topic, event: itemEvent, payload: [itemEvent.text: value, "created": .bool(previous == nil)],
                             tags: (previous.map { changed(record, from: $0) } ?? allFields)
                                + Membership.tags(before: previous.map(filterValues), after: filterValues(record)),
                             values: [(topic, [itemEvent.text: value])], members: [member(record, json: value)],
                             records: [HeraldServer.Record(kind: Record.noun, id: record.id, bytes: bytes)])
    }

    /// A record removed: `removed` with its id, and its current value gone.
    static func removed(_ removed: any KeyedRecord) -> Journal.Entry? {
        guard let previous = removed as? Record else { return nil }
        let id = previous.id, topic = Record.topic(id)
        return Journal.Entry(topic: topic, event: .removed, payload: ["id": .string(id)],
                             tags: Membership.tags(before: filterValues(previous), after: nil), values: [(topic, nil)],
                             members: [Member(collection: collection, key: id, value: nil)],
                             records: [HeraldServer.Record(kind: Record.noun, id: id, document: nil)])
    }

    /// A restored record's current value and collection member, its JSON written once for both.
    static func seeded(_ seeded: any KeyedRecord) -> (value: (topic: String, value: JSONValue?), member: Member)? {
        guard let record = seeded as? Record else { return nil }
        let value = JSONValue.encoded(json(record).bytes)
        return ((Record.topic(record.id), [itemEvent.text: value]), member(record, json: value))
    }

    /// Every field, in order: what a new record changed (sorted once, in the registry's collection).
    private static var allFields: [String] { CollectionKind.allCases.first { $0.topic == collection }?.changedFields.all ?? fields.sorted() }

    private static func member(_ record: Record, json: JSONValue) -> Member {
        Member(collection: collection, key: record.id, value: json, values: filterValues(record))
    }
}

/// Every kind Herald serves. The keyed kinds are declared here and nowhere else; auctions, trips,
/// currency and notifications have domains of their own (a countdown, localized times, one value,
/// no state) and are `CollectionKind`'s and `Topic`'s own cases.
enum Registry {
    /// The keyed kinds: a new one is a line here.
    static let keyed: [any KeyedKind.Type] = [UnitKind.self]

    /// The keyed kind whose collection is `collection`.
    static func keyedKind(_ collection: some StringProtocol) -> (any KeyedKind.Type)? {
        keyed.first { $0.collection == collection }
    }

    /// The keyed kind whose stored records are called `noun` (`unit`).
    static func keyedKind(storedAs noun: String) -> (any KeyedKind.Type)? {
        keyed.first { $0.noun == noun }
    }

    /// The snapshot of a keyed record not made yet, which may be observed (`{"topic":"units/x","unit":null}`).
    static func absentValue(of topic: String) -> [UInt8]? {
        guard case .record(let collection, _)? = Topic(topic), let kind = keyedKind(collection) else { return nil }
        return JSONValue.object([("topic", .string(topic)), (kind.itemEvent.text, .null)]).bytes
    }

    /// The forms of every topic, as a 400 lists them.
    static var topicForms: String {
        (["currency", "auctions", "trips"] + keyed.map { $0.collection } + ["auctions/{id}", "trips/{id}"]
            + keyed.map { $0.collection + "/{id}" }).joined(separator: ", ") + " and notifications/{name}"
    }

    /// Every subject's topic kind, for labels: the fixed ones and each keyed collection.
    static var topicKinds: [String] { ["auctions", "currency", "trips"] + keyed.map { $0.collection } + ["notifications"] }
}
