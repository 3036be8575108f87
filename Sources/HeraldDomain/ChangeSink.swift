import HeraldJSON

/// A piece of domain state to keep across restarts: `document` is all it takes to restore it.
public struct Record: Sendable {
    public let kind: String
    public let id: String
    private let render: @Sendable () -> JSONValue?

    /// The state, or nil when it is gone. Rendered when asked for, so a server without a store never
    /// pays for it.
    public var document: JSONValue? { render() }

    public init(kind: String, id: String, document: @autoclosure @escaping @Sendable () -> JSONValue?) {
        self.kind = kind
        self.id = id
        self.render = document
    }
}

/// One change of domain state, as the domain reports it to whoever stores and publishes it.
public struct Change: Sendable {
    /// The subject the change belongs to, such as `auctions/7`.
    public let topic: String
    /// The event's name, such as `bid`; nil for a change observers are not told of (a new auction).
    public let event: String?
    /// The event's payload (without its topic).
    public let payload: JSONValue
    /// Labels an observer's filter may use (changed field names, posting object).
    public let tags: [String]
    /// Subjects whose current value changes: topic and new snapshot payload (nil: gone).
    public let values: [(topic: String, value: JSONValue?)]
    /// Entries of collection subjects that change: the collection, the entry's key, its new value (nil: gone).
    public let members: [Member]
    /// Records to store with the event, in the same transaction.
    public let records: [Record]
    /// An auction to store with the event, in the same transaction.
    public let auction: AuctionWrite?
    /// False for news of the moment (a countdown's tick): published, never stored, never replayed.
    public let durable: Bool

    public init(topic: String, event: String?, payload: JSONValue = [:], tags: [String] = [],
                values: [(topic: String, value: JSONValue?)] = [], members: [Member] = [], records: [Record] = [],
                auction: AuctionWrite? = nil, durable: Bool = true) {
        self.topic = topic
        self.event = event
        self.payload = payload
        self.tags = tags
        self.values = values
        self.members = members
        self.records = records
        self.auction = auction
        self.durable = durable
    }
}

/// One entry of a collection subject (such as one unit in `units`).
public struct Member: Sendable {
    public let collection: String
    public let key: String
    public let value: JSONValue?

    public init(collection: String, key: String, value: JSONValue?) {
        self.collection = collection
        self.key = key
        self.value = value
    }
}

/// Stores and publishes every change, in order. The domain changes its memory only after `publish`
/// returns: a change that could not be stored (`DomainError.unavailable`) never happened.
///
/// Changes are made one at a time, where the sink runs them (Herald's writer thread, `perform`). So a
/// change reads the state under the domain's lock, calls `publish` without holding it, and writes the
/// new state back under it: nothing else changes the state in between, and a reader never waits for
/// the disk.
public protocol ChangeSink: Sendable {
    func publish(_ change: Change) throws(DomainError)
    /// Sets current values without an event or a record (restoring or seeding at start).
    func seed(_ values: [(topic: String, value: JSONValue?)], members: [Member])
    /// Declares a collection subject: its value is `{"topic": topic, arrayName: [entries…]}`.
    func declareCollection(_ topic: String, arrayName: String)
    /// Runs `work` where changes are made, after every change asked for before it, and returns once it
    /// ran and its changes are published. A timer that changes state fires through it, holding no lock.
    func perform(_ work: @escaping @Sendable () -> Void)
}

extension ChangeSink {
    public func seed(_ values: [(topic: String, value: JSONValue?)]) { seed(values, members: []) }
}
