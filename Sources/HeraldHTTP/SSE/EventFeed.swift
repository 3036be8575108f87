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

/// What a feed has for its stream.
public enum FeedPoll: Sendable {
    /// Encoded SSE messages (see `SSEEncoder`), each usually shared by every stream that sends it.
    case frames([[UInt8]])
    /// Nothing now: the feed calls its waker once when it has something (or has finished).
    case idle
    /// The feed is over; the stream closes and the client may reconnect.
    case finished
}

/// The source of an SSE stream. The HTTP layer polls it when it can write, suspends the connection
/// when it is idle, and resumes it when the feed calls the waker.
public protocol EventFeed: AnyObject, Sendable {
    func poll(limit: Int) -> FeedPoll
    /// Sets the function to call when an idle feed has something (`false`) or when the feed is over
    /// (`true`: the connection is closed even if it is busy writing). It may be called from any thread.
    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void)
    /// The connection is gone: release what the feed holds. Called exactly once.
    func close()
}
