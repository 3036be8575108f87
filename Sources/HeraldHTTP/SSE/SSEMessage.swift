/// One Server-Sent Events message. `data` is shared, never copied per connection until it is written.
public struct SSEMessage: Sendable, Equatable {
    public let id: String?
    public let event: String?
    public let data: [UInt8]

    public init(id: String?, event: String?, data: [UInt8]) {
        self.id = id
        self.event = event
        self.data = data
    }
}
