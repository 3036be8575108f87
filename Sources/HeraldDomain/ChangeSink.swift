import HeraldJSON

/// One change of domain state, as the domain reports it to whoever publishes it.
public struct Change: Sendable {
    /// The subject the event belongs to, such as `auctions/7`.
    public let topic: String
    /// The event's name, such as `bid`.
    public let event: String
    /// The event's payload (without its topic).
    public let payload: JSONValue
    /// Labels an observer's filter may use (changed field names, posting object).
    public let tags: [String]
    /// Subjects whose current value changes with this event: topic and new snapshot payload (nil: gone).
    public let values: [(topic: String, value: JSONValue?)]

    public init(topic: String, event: String, payload: JSONValue, tags: [String] = [], values: [(topic: String, value: JSONValue?)] = []) {
        self.topic = topic
        self.event = event
        self.payload = payload
        self.tags = tags
        self.values = values
    }
}

/// Receives every change, in order, while the domain still holds the lock that made it:
/// a change reported here is the state every later reader sees.
public protocol ChangeSink: Sendable {
    func publish(_ change: Change)
    /// Sets current values without an event (seeding at start).
    func seed(_ values: [(topic: String, value: JSONValue?)])
}
