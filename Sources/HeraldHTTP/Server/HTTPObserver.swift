/// What the server tells about its work, for metrics and logs: every answer, every stream's end and
/// the events streams carry. Its methods run on the server's threads and must not block.
public protocol HTTPObserver: AnyObject, Sendable {
    /// A request was answered, or its stream started (on the thread that queued the answer).
    func answered(_ exchange: Exchange)
    /// A stream the engine held has ended (on the engine's thread).
    func streamEnded(_ summary: StreamSummary)
    /// `count` events were written to one stream (on the engine's thread, once per write).
    func delivered(_ count: Int)
}

/// One request and its answer.
public struct Exchange: Sendable {
    public let method: String
    /// The path as sent, without the query.
    public let path: String
    /// The pattern of the route that answered (`/auctions/{id}`); nil when none matched.
    public let route: String?
    public let status: Int
    /// From the request's head to its answer being queued (for a stream: to its first bytes).
    public let duration: Duration
    public let requestID: String
    public let client: String
    /// The answer is an SSE stream, now held by the stream engine.
    public let isStream: Bool

    public init(method: String, path: String, route: String?, status: Int, duration: Duration, requestID: String,
                client: String, isStream: Bool) {
        (self.method, self.path, self.route, self.status) = (method, path, route, status)
        (self.duration, self.requestID, self.client, self.isStream) = (duration, requestID, client, isStream)
    }
}

/// A stream that ended: who held it, how long, what it carried and why it ended.
public struct StreamSummary: Sendable {
    public enum End: String, Sendable {
        /// The client closed its connection, or the socket failed.
        case clientLeft = "client left"
        /// The client read too slowly: its socket stayed full, or its queue overflowed.
        case slowConsumer = "slow consumer"
        /// Its token expired.
        case expired = "token expired"
        /// The server is stopping.
        case shutdown
        /// Its feed ended (the subscription was cancelled), or a held request was answered.
        case finished = "feed ended"
        /// A held request (`/changes?wait=`) was answered because its wait ran out.
        case waitEnded = "wait ended"
        /// An administrator ended it (`DELETE /streams/{id}`).
        case ended = "ended by an administrator"
        /// A revocation covered its token (`POST /revocations`).
        case revoked
    }

    public let requestID: String
    public let client: String
    public let path: String
    public let duration: Duration
    public let events: Int
    public let end: End

    public init(requestID: String, client: String, path: String, duration: Duration, events: Int, end: End) {
        (self.requestID, self.client, self.path, self.duration, self.events, self.end) = (requestID, client, path, duration, events, end)
    }
}
