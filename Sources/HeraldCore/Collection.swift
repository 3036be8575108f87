import HeraldJSON

/// Which members of a collection an observer watches: for each field it names, the values it takes
/// (`status` in `open`; `status` in `wounded, dead`). No field: every member.
public struct CollectionFilter: Sendable, Hashable {
    /// Field name → the values that pass, by field name.
    public let fields: [String: Set<String>]
    /// For each field, the member values that pass it, spelled as members carry them (`status=open`):
    /// a member passes when, for every field, one of its values is one of these, byte for byte. Fan-out
    /// asks once per observer and event, so this is a comparison of bytes, not of strings.
    private let accepted: [[[UInt8]]]

    public init(_ fields: [String: Set<String>] = [:]) {
        self.fields = fields
        accepted = fields.keys.sorted().map { field in (fields[field] ?? []).sorted().map { Array("\(field)=\($0)".utf8) } }
    }

    public static func == (lhs: CollectionFilter, rhs: CollectionFilter) -> Bool { lhs.fields == rhs.fields }
    public func hash(into hasher: inout Hasher) { hasher.combine(fields) }

    /// Whether a member with these filter values (`status=open`, …) passes; nil (no member) never does.
    func matches(_ values: [Substring]?) -> Bool {
        guard let values else { return false }
        for field in accepted {
            guard values.contains(where: { value in field.contains { $0.elementsEqual(value.utf8) } }) else { return false }
        }
        return true
    }
}

/// A value a collection's filter looks at, as a member yields it: its `status` is `open`. Members
/// carry it, and filters compare it, as `status=open`.
public struct FilterValue: Sendable, Hashable {
    public let field: String
    public let value: String

    public init(field: String, value: String) {
        self.field = field
        self.value = value
    }

    /// `field=value`: what a member carries, a filter compares and a tag holds.
    var text: String { field + "=" + value }
}

/// A change of one member of a collection subject, as its event's tags tell it: the member's filter
/// values before the change (`was:status=open`) and after it (`is:status=closed`). No `was:` tag: it
/// was not a member (created); no `is:` tag: it is no longer one (removed). Because the event carries
/// both, whether it entered, stayed in or left a filtered set is known from the event alone, in a
/// replay as live.
public struct Membership: Sendable {
    /// The collection (`auctions`) and the member's id in it (`7`).
    public let collection: String
    public let id: String
    let before: [Substring]?
    let after: [Substring]?
    /// The event as the collection's observers get it while the member passes their filter: its data,
    /// named as the collection names its members (`auction`).
    let item: Event?
    /// `left` `{"topic":…,"id":…}`, for observers whose filter it passed before and not after; nil when
    /// no filter can flip (its values did not change).
    let left: Event?

    /// The tags that say a member's values before and after a change. Stored with the event, so this
    /// is a stored form, form 1 (written since store schema 5, whose fixture `store-schema-5` pins it):
    /// `was:field=value` for each value before, `is:field=value` for each after. A later form takes
    /// prefixes of its own and `init(id:…)` goes on reading this one, so stored events replay as they did.
    public static func tags(before: [FilterValue]?, after: [FilterValue]?) -> [String] {
        (before ?? []).map { "was:" + $0.text } + (after ?? []).map { "is:" + $0.text }
    }

    /// The membership an event's tags describe, for the collection above its topic, whose members'
    /// event is `itemName`; nil when the tags describe none. `frame`: the change's own frame, when the
    /// item is that event byte for byte (its name is `itemName`).
    init?(id eventID: UInt64, order: UInt64, topic: String, data: [UInt8], tags: [String], itemName: EventName, encoder: Event.Encoder?,
          frame: [UInt8]? = nil) {
        var before: [Substring]?, after: [Substring]?
        for tag in tags {
            if tag.hasPrefix("was:") { if before == nil { before = [] }; before?.append(tag.dropFirst(4)) }
            if tag.hasPrefix("is:") { if after == nil { after = [] }; after?.append(tag.dropFirst(3)) }
        }
        guard before != nil || after != nil, let slash = topic.lastIndex(of: "/") else { return nil }
        collection = String(topic[..<slash])
        id = String(topic[topic.index(after: slash)...])
        self.before = before
        self.after = after
        item = after.map { _ in
            frame.map { Event(id: eventID, order: order, topic: topic, name: itemName, data: data, frame: $0) }
                ?? Event(id: eventID, order: order, topic: topic, name: itemName, data: data, encoder: encoder)
        }
        let id = id
        left = before.flatMap { before in
            guard before != after else { return nil }
            let data = JSONValue.object([("topic", .string(topic)), ("id", .string(id))]).bytes
            return Event(id: eventID, order: order, topic: topic, name: .left, data: data, encoder: encoder)
        }
    }

    /// What an observer with `filter` gets of the change: the member's state while it passes, `left`
    /// when it passed and no longer does, nothing when it passes neither before nor after.
    func view(through filter: CollectionFilter) -> Event? {
        if filter.matches(after) { return item }
        if filter.matches(before) { return left }
        return nil
    }
}

extension EventName {
    /// A member of a collection stopped passing an observer's filter, or was removed.
    public static let left: EventName = "left"
}

/// A subject whose value is its members' entries: `{"topic":"units","units":[…]}`. A change of one
/// member costs the same however many there are; the snapshot is rendered when an observer asks for
/// one, once for each filter until the next change, and shared by the observers that ask meanwhile.
struct Collection {
    /// The array's name in a snapshot (`units`) and a member's event name (`unit`).
    let arrayName: String
    let itemName: EventName
    /// Entries and their filter values (`status=open`), by member id.
    var members: [String: (entry: [UInt8], values: [Substring])] = [:]
    /// Member ids in id order (numbers by value, then the rest as text); nil after an id came or went.
    private var order: [String]?
    /// Snapshot events made since the last change, by filter.
    private var snapshots: [CollectionFilter: [Event]] = [:]

    /// A snapshot event holds members up to about this many bytes; a larger collection is framed as
    /// several `snapshot` events, each but the last with `"more":true`.
    static let snapshotBytes = 8 * 1024

    init(arrayName: String, itemName: EventName) {
        self.arrayName = arrayName
        self.itemName = itemName
    }

    mutating func set(_ key: String, entry: [UInt8]?, values: [String]) {
        if let entry {
            if members.updateValue((entry, values.map { Substring($0) }), forKey: key) == nil { order = nil }
        } else if members.removeValue(forKey: key) != nil {
            order = nil
        }
        snapshots = [:]
    }

    /// `a` before `b` in id order: numeric ids by value (`9` before `10`), then other ids as text.
    static func precedes(_ a: String, _ b: String) -> Bool {
        let aNumber = a.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }, bNumber = b.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        switch (aNumber, bNumber) {
        case (true, true): return a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a < b
        case (true, false): return true
        case (false, true): return false
        case (false, false): return a < b
        }
    }

    /// The snapshot events of the members `filter` passes, in id order, made for `topic` at `id`.
    mutating func snapshot(_ topic: String, filter: CollectionFilter, id: UInt64, order sequence: UInt64,
                           encoder: Event.Encoder?) -> [Event] {
        if let made = snapshots[filter] { return made }
        if order == nil { order = members.keys.sorted(by: Self.precedes) }
        let head = JSONValue.object([("topic", .string(topic)), (arrayName, .array([]))]).bytes.dropLast(2)
        var events: [Event] = []
        var bytes = Array(head), count = 0
        func close(more: Bool) {
            bytes.append(contentsOf: more ? #"],"more":true}"#.utf8 : "]}".utf8)
            // Kept as its frame only: a large collection's snapshot is held once, not twice.
            events.append(Event(id: id, order: sequence, topic: topic, name: .snapshot, data: bytes, encoder: encoder, keepsData: false))
            bytes = Array(head)
            count = 0
        }
        for key in order ?? [] {
            guard let member = members[key], filter.matches(member.values) else { continue }
            if count > 0 {
                if bytes.count + member.entry.count > Self.snapshotBytes { close(more: true) } else { bytes.append(UInt8(ascii: ",")) }
            }
            bytes.append(contentsOf: member.entry)
            count += 1
        }
        close(more: false)
        snapshots[filter] = events
        return events
    }
}
