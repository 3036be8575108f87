public import Foundation

/// What a feed did when asked for its frames.
public enum FeedPoll: Sendable {
    /// Frames were appended; more may be queued.
    case taken
    /// Nothing is queued: the feed calls its waker once when something is (or when it has finished).
    case idle
    /// The feed is over; the stream closes and the client may reconnect.
    case finished
    /// What was appended is the feed's last: once it is written, the body ends cleanly.
    case complete
}

/// Bytes a stream sends from a file (`sendfile`) rather than from memory: `count` bytes from the file's
/// start, followed in it by CRLF (the end of an HTTP/1.1 chunk). `owner` keeps the file open while the
/// stream sends.
public struct FileRegion: Sendable {
    public let descriptor: Int32
    public let count: Int
    public let owner: any AnyObject & Sendable

    public init(descriptor: Int32, count: Int, owner: any AnyObject & Sendable) {
        self.descriptor = descriptor
        self.count = count
        self.owner = owner
    }
}

/// The source of an SSE stream. The stream engine takes its frames when the socket can be written,
/// and sleeps on it when it is idle until the feed calls the waker.
public protocol EventFeed: AnyObject, Sendable {
    /// Appends encoded SSE messages (see `SSEEncoder`) to `out`, oldest first, until `out` holds at
    /// least `limit` bytes or nothing is left.
    func take(into out: inout [UInt8], limit: Int) -> FeedPoll
    /// As `take(into:limit:)`, and the feed may end what it takes with a region of a file (`file`), whose
    /// bytes the stream sends after `out`'s. A feed that has none leaves `file` nil.
    func take(into out: inout [UInt8], limit: Int, file: inout FileRegion?) -> FeedPoll
    /// Sets the function to call when an idle feed has something (`false`) or when the feed is over
    /// (`true`: the stream is closed even if it is busy writing). It may be called from any thread.
    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void)
    /// The stream is gone: release what the feed holds. Called exactly once.
    func close()
    /// When the stream ends (its token expires): it is then closed cleanly, and the client reconnects
    /// with a fresh token and `Last-Event-ID`. nil: it never has to. A `renewable` feed's end may move
    /// (its token was renewed); it then wakes its stream, and the engine reads it again.
    var expires: Date? { get }
    /// Whether `expires` may move while the stream is open.
    var renewable: Bool { get }
    /// The stream ends soon (`StreamEngine`'s expiry warning before `expires`): the feed queues its
    /// warning and returns true, or returns false if it has none. The engine's thread.
    func warnExpiring() -> Bool
    /// The stream ends now because its time ran out: the feed's last bytes (by default `last(into:)`'s).
    func expired(into out: inout [UInt8])
    /// Events taken so far (for the stream's summary and the delivered count); the engine's thread only.
    var eventsTaken: Int { get }
    /// The feed finished because its client fell too far behind (a slow consumer).
    var overflowed: Bool { get }
    /// Whether what is queued is still the stream's first events (a snapshot or a replay), which the
    /// engine takes a little at a time.
    var catchingUp: Bool { get }
    /// Whether the engine may write heartbeat comments to the stream (not before a held answer's head).
    var heartbeats: Bool { get }
    /// The stream ends cleanly now (its time ran out, or the server stops): the feed's last bytes.
    func last(into out: inout [UInt8])
    /// The key fan-out divides observers by (its observer's id; nil: none): the engine puts the stream
    /// on the loop that fans its events out, so that waking it needs no hand-over between loops.
    var shareKey: UInt64? { get }
    /// Why the stream ends, when the feed knows better than the engine (which says `finished` for a
    /// completed feed, `expired` when `expires` comes): nil by default.
    var ending: StreamSummary.End? { get }
}

extension EventFeed {
    public func take(into out: inout [UInt8], limit: Int, file: inout FileRegion?) -> FeedPoll { take(into: &out, limit: limit) }
    public var expires: Date? { nil }
    public var renewable: Bool { false }
    public func warnExpiring() -> Bool { false }
    public func expired(into out: inout [UInt8]) { last(into: &out) }
    public var eventsTaken: Int { 0 }
    public var overflowed: Bool { false }
    public var heartbeats: Bool { true }
    public var catchingUp: Bool { false }
    public func last(into out: inout [UInt8]) {}
    public var shareKey: UInt64? { nil }
    public var ending: StreamSummary.End? { nil }
}
