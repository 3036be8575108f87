/// What an event is called on the wire (its SSE `event:` line), such as `bid` or `snapshot`. The hub
/// names its own (`snapshot`, `position`); each subject names its events where it publishes them.
public struct EventName: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral text: String) { self.text = text }

    public var description: String { text }

    /// A subject's current value, the first event a new observer gets for it.
    public static let snapshot: EventName = "snapshot"
    /// A position marker: it carries only its id (the sequence when a stream started), encoded as the
    /// stream's `ready` event, which sets the client's last event id.
    public static let position: EventName = ""
}
