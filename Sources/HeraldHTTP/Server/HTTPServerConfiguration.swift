/// How the HTTP server listens and what it allows a connection.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or a name such as `localhost`.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free one (read it back from `HTTPServer.port`).
    public var port: Int = 8080
    /// Most connections held at once; nil: the open-file limit less a reserve.
    public var connectionLimit: Int?
    /// libmicrohttpd's memory pool per connection (headers, buffers).
    public var connectionMemoryLimit: Int = 16 * 1024
    /// Largest request body accepted; a larger one gets 413.
    public var bodyLimit: Int = 64 * 1024
    /// Seconds an idle non-streaming connection is kept open. Streams have no timeout.
    public var connectionTimeout: Int = 60
    /// How long before its token's `exp` a stream is warned (`token-expiring`).
    public var expiryWarning: Duration = .seconds(60)
    /// How often an SSE stream gets a heartbeat comment; nil: never.
    public var heartbeat: Duration? = .seconds(15)
    /// The `retry:` an SSE stream tells its client, in milliseconds.
    public var retryMilliseconds: Int = 3000
    /// Host names (or `name:port`) requests may name in `Host`; others get 421. nil: any host.
    public var allowedHosts: [String]? = nil
    /// Pending connections the kernel may queue before accept.
    public var listenBacklog: Int = 4096
    /// SSE streams held at once; nil: the open-file limit less a reserve.
    public var streamLimit: Int?
    /// SSE streams one client address may hold; more get 429. nil: no limit.
    public var streamsPerClient: Int? = 100
    /// New connections one address may open a second (bursts of twice that); others are closed
    /// unanswered at accept. Trusted proxies are not limited. nil: no limit.
    public var connectionsPerSecond: Int? = 200
    /// Connections one address may hold at once, streams included; more are closed unanswered at
    /// accept. Trusted proxies are not limited. nil: no limit.
    public var connectionsPerAddress: Int? = 256
    /// The time a client has to send a request's head (slowloris); its connection is then closed.
    public var headerTimeout: Duration = .seconds(10)
    /// The time a client has, once its head is in, to send the body it declared (a body that drips
    /// would hold its connection for ever); its connection is then closed.
    public var requestTimeout: Duration = .seconds(30)
    /// Largest request head (header names and values) accepted; a larger one gets 431.
    public var headerBytesLimit: Int = 8 * 1024
    /// Longest request target (path and query) accepted; a longer one gets 414.
    public var targetBytesLimit: Int = 8 * 1024
    /// Proxies whose `X-Forwarded-For` names the client; empty: the peer is the client.
    public var trustedProxies: [AddressRange] = []
    /// The stream engine's loops, each a thread with its own epoll set and share of the streams
    /// (1 to `StreamEngine.threadLimit`); by default one for each core (see `StreamEngine.defaultThreads`).
    public var streamThreads: Int = StreamEngine.defaultThreads
    /// Whether a loop takes events published while it writes into the pass (`fanOutWhileWriting`), or
    /// leaves them for the next pass: the same bytes to every stream, sooner. Off only to compare the
    /// two paths (`FanOutWhileWritingTests`).
    public var fanOutWhileWriting = true
    /// Whether a batch of events wakes only the stream loops whose share holds an observer of it, or
    /// every loop: the same bytes to every stream, with fewer wake-ups. Off only to compare the two
    /// paths (`LoopWakeTests`).
    public var wakeOnlyLoopsWithObservers = true
    /// The stream engine's time; a test may give one that moves when it says.
    public var streamClock: any StreamClock = SystemStreamClock()

    public init() {}
}

/// Why the server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
