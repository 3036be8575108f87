import CLinux
import CMicroHTTPD
import Foundation
import HeraldJSON
import HeraldThreads
public import Logging
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: one epoll thread, keep-alive, bodies read in chunks with a
/// limit. An SSE stream's socket is handed to the `StreamEngine` once its request is read: one more
/// thread writes every stream.
public final class HTTPServer: Sendable {
    struct Daemon: @unchecked Sendable {
        // Only passed to libmicrohttpd's thread-safe functions (info, stop).
        let raw: OpaquePointer
    }

    public let configuration: HTTPServerConfiguration
    /// What every stream starts with (`SSEEncoder.preamble`), made once.
    let streamPreamble: [UInt8]
    let handler: @Sendable (Request) -> Response
    /// GETs of kept subjects, answered before `handler` would be asked (see `QuickReads`).
    let quickReads: QuickReads?
    /// How many requests `quickReads` answered.
    let quickAnswers = Atomic<Int>(0)
    /// libmicrohttpd's responses to quick reads of subjects that have not changed since.
    let quickResponses: ThreadBound<QuickResponses>
    /// How many of those responses were made (a read of a kept one makes none).
    let quickResponsesMade = Atomic<Int>(0)
    /// How many quick reads were answered as lasting, without a read (`QuickResponses.lasting`).
    let lastingAnswers = Atomic<Int>(0)
    /// Finished requests' contexts, kept for the next requests.
    let contexts: ThreadBound<RequestContexts>
    let logger: Logger
    /// Told of every answer and stream (metrics, the access log); nil: nobody.
    let observer: (any HTTPObserver)?
    /// The SSE streams, once their sockets are handed over.
    public let streams: StreamEngine
    /// The engine's fan-out (`StreamEngine.Duties.fanOut`), given to it when the server starts.
    let fanOut: (@Sendable (_ shares: Int) -> StreamEngine.FanOutWork?)?
    /// libmicrohttpd's thread, which runs every callback (bound by the first).
    let requestThread = OwnerThread(name: "herald-http")
    /// The request thread's wake-ups of the engine, held while it answers (the answer goes out first).
    let requestHold: WakeHold
    /// Made again once the port is bound (port 0 picks one), before any request.
    let guardState: Lock<RequestGuard>
    let requestIDs = RequestIDs()
    /// Who a request comes from, behind trusted proxies.
    let clients: ClientResolver
    /// New connections per address and second; nil: no limit.
    let connectionRate: RateLimiter?
    /// Every connection libmicrohttpd holds: deadlines, addresses, idleness.
    let connections: ConnectionTable
    /// Connections held (with streams, descriptors used) past which idle connections are closed to
    /// make room: the connection limit, and the open-file limit less the store's and logs' share,
    /// each less `reserve`.
    let roomyConnections: Int, roomyDescriptors: Int
    private let daemon = Lock<Daemon?>(nil)
    private let boundPort = Atomic<Int>(0)
    /// The listening socket has Nagle off, so every socket it accepts starts so (`clinux_no_delay`).
    let acceptsWithoutDelay = Atomic<Bool>(false)
    /// Set when stopping begins: new streams are refused, so every stream can be ended before the daemon stops.
    let draining = Atomic<Bool>(false)

    /// - Parameters:
    ///   - streams: the engine that writes the streams (made with `StreamEngine(for:observer:)`, when
    ///     what publishes must wake it before the server is made); nil: one of the server's own.
    ///   - fanOut: what the engine's first loop takes to fan out, each time it wakes (see
    ///     `StreamEngine.Duties`); nil: the streams' feeds are woken by their publishers.
    ///   - quickReads: GETs answered from what the application keeps, past the same checks.
    ///   - handler: answers every request; runs on the server's thread and must not block.
    public init(configuration: HTTPServerConfiguration, logger: Logger, observer: (any HTTPObserver)? = nil,
                streams: StreamEngine? = nil, fanOut: (@Sendable (_ shares: Int) -> StreamEngine.FanOutWork?)? = nil,
                quickReads: QuickReads? = nil, handler: @escaping @Sendable (Request) -> Response) {
        self.configuration = configuration
        self.fanOut = fanOut
        self.quickReads = quickReads
        streamPreamble = SSEEncoder.preamble(retryMilliseconds: configuration.retryMilliseconds)
        self.logger = logger
        self.observer = observer
        self.handler = handler
        requestHold = WakeHold(owner: requestThread)
        quickResponses = ThreadBound(QuickResponses(), owner: requestThread)
        // Checked now, not at the first quick read: whether a kept response's id may be written in place.
        if quickReads != nil, !QuickResponses.writesInPlace {
            logger.notice("this libmicrohttpd keeps a response's fields where Herald cannot write them: a kept answer's X-Request-ID is replaced instead")
        }
        contexts = ThreadBound(RequestContexts(), owner: requestThread)
        self.streams = streams ?? StreamEngine(for: configuration, observer: observer)
        clients = ClientResolver(trustedProxies: configuration.trustedProxies)
        connectionRate = configuration.connectionsPerSecond.map { RateLimiter(rate: $0, burst: 2 * $0) }
        let connections = ConnectionTable(timeout: configuration.headerTimeout, bodyTimeout: configuration.requestTimeout)
        self.connections = connections
        roomyConnections = max((configuration.connectionLimit ?? Self.defaultConnectionLimit()) - Self.reserve, 1)
        roomyDescriptors = max(Self.openFileLimit() - 64 - Self.reserve, 1)
        guardState = Lock(RequestGuard(allowedHosts: configuration.allowedHosts, port: configuration.port))
    }

    /// The port the server listens on, once started.
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// How many requests were answered as quick reads.
    public var quickReadCount: Int { quickAnswers.load(ordering: .relaxed) }

    /// How many libmicrohttpd responses quick reads made: one per version of a subject read, while
    /// its response stays kept (`QuickResponses`).
    public var quickResponseCount: Int { quickResponsesMade.load(ordering: .relaxed) }

    /// How many quick reads were answered with the response of an earlier read of the same target,
    /// the state unchanged since (`QuickResponses.lasting`).
    public var lastingAnswerCount: Int { lastingAnswers.load(ordering: .relaxed) }

    /// Binds and starts serving.
    public func start() throws(HTTPServerError) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var info: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(configuration.host, String(configuration.port), &hints, &info)
        guard status == 0, let address = info else {
            throw HTTPServerError("cannot resolve host '\(configuration.host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(info) }
        let isIPv6 = address.pointee.ai_family == AF_INET6
        // TURBO: libmicrohttpd does not `shutdown` a socket it closes (connection.c:796), so a stream's
        // socket, handed to the engine as a second descriptor, outlives libmicrohttpd's connection.
        // ITC: `MHD_quiesce_daemon` (closing the listener when stopping begins) needs it (daemon.c:5506).
        // Suspend and resume: a change waits for the writer with its connection suspended (daemon.c:3218);
        // a connection resumed just before stopping is still finished (daemon.c:7498).
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_USE_TURBO.rawValue | MHD_USE_ITC.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        if logger.logLevel <= .debug { flags |= MHD_USE_ERROR_LOG.rawValue }
        let settings = cmhd_daemon_settings(
            flags: UInt32(flags), address: address.pointee.ai_addr,
            connection_limit: UInt32(configuration.connectionLimit ?? Self.defaultConnectionLimit()),
            memory_limit: configuration.connectionMemoryLimit,
            connection_timeout: UInt32(max(configuration.connectionTimeout, 0)),
            listen_backlog: UInt32(configuration.listenBacklog),
            uri_log: HTTPServer.targetCallback,
            accept_policy: HTTPServer.acceptCallback,
            notify_connection: HTTPServer.connectionCallback)
        let context = Unmanaged.passRetained(self)
        guard let raw = cmhd_start_daemon(settings, HTTPServer.accessCallback, context.toOpaque(),
                                          HTTPServer.completedCallback, context.toOpaque()) else {
            context.release()
            throw HTTPServerError("cannot listen on \(configuration.host):\(configuration.port): \(Self.whyNotBound(address.pointee))")
        }
        daemon.withLock { $0 = Daemon(raw: raw) }
        let port = Int(cmhd_bound_port(raw))
        boundPort.store(port, ordering: .relaxed)
        acceptsWithoutDelay.store(clinux_no_delay(cmhd_listen_fd(raw)) == 0, ordering: .relaxed)
        guardState.withLock { $0 = RequestGuard(allowedHosts: configuration.allowedHosts, port: port) }
        // Each second: connections past their deadlines go, and when room is short, the longest idle
        // (a connection libmicrohttpd holds at its limit accepts no other that would close them).
        streams.start(heartbeat: configuration.heartbeat, duties: StreamEngine.Duties(fanOut: fanOut) { [weak self] in
            guard let self else { return }
            connections.sweep()
            makeRoom()
        })
        logger.debug("http server started", metadata: ["http.host": "\(configuration.host)", "http.port": "\(port)"])
    }

    /// Stops: refuses new streams and connections, ends every stream cleanly (the chunked body's last
    /// chunk), waits up to `grace` for them to finish, then cuts off the ones whose clients do not read.
    public func stop(grace: Duration = .seconds(5)) {
        guard let raw = daemon.withLock({ $0 })?.raw else { return }
        draining.store(true, ordering: .sequentiallyConsistent)
        let listener = MHD_quiesce_daemon(raw)
        if listener >= 0 { close(listener) } else { logger.error("the listening socket could not be closed before the streams end") }
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        // Again on every pass: a stream whose response was being made when draining began joins late.
        while streams.count > 0, clock.now < deadline {
            streams.closeAll(.graceful)
            Thread.sleep(forTimeInterval: 0.01)
        }
        let cutOff = clock.now + .seconds(2)
        while streams.count > 0, clock.now < cutOff {
            streams.closeAll(.abort)
            Thread.sleep(forTimeInterval: 0.01)
        }
        if streams.count > 0 { logger.error("streams still open when the server stopped", metadata: ["http.streams": "\(streams.count)"]) }
        streams.stop()
        daemon.withLock { $0 = nil }
        MHD_stop_daemon(raw)
        Unmanaged.passUnretained(self).release()
        logger.debug("http server stopped")
    }

    /// Streams the engine holds at most: the open-file limit less room for ordinary connections, the
    /// store and logs. libmicrohttpd does not count the streams it handed over, and when it has no
    /// connection of its own and `accept` fails for want of descriptors it retries in a busy loop
    /// (daemon.c:3663): the reserve keeps descriptors for it.
    static func streamLimit(_ connectionLimit: Int?) -> Int {
        max(min(connectionLimit ?? Int.max, openFileLimit() - 256), streamFloor)
    }

    /// The fewest streams the engine holds, whatever the limits say.
    public static let streamFloor = 16

    static func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// Connections kept free for whoever comes next (a health probe, a client with a change): when
    /// fewer are free, each new connection closes the one longest idle.
    static let reserve = 32

    /// When fewer than `reserve` connections are free (counting streams against the open-file limit),
    /// closes the ones longest idle until that many are.
    func makeRoom() {
        let held = connections.count
        let excess = max(held - roomyConnections, held + streams.count - roomyDescriptors)
        guard excess > 0 else { return }
        let closed = connections.closeIdle(excess)
        if closed > 0 { logger.debug("idle connections closed to make room", metadata: ["http.closed": "\(closed)"]) }
    }

    /// Why the listener could not start, found by binding the address once more (libmicrohttpd keeps
    /// its `errno` to itself): in use, not permitted, or not this machine's.
    static func whyNotBound(_ address: addrinfo) -> String {
        let probe = socket(address.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard probe >= 0 else { return "no socket could be made (\(String(cString: strerror(errno))))" }
        defer { close(probe) }
        var on: Int32 = 1
        _ = setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard bind(probe, address.ai_addr, address.ai_addrlen) != 0 else { return "libmicrohttpd could not start (the address binds)" }
        switch errno {
        case EADDRINUSE: return "the port is in use by another program (stop it, or choose another --port)"
        case EACCES: return "not permitted: a port below 1024 needs root or CAP_NET_BIND_SERVICE (choose --port 1024 or above)"
        case EADDRNOTAVAIL: return "the address is not one of this machine's (see --host)"
        default: return String(cString: strerror(errno))
        }
    }

    /// The open-file limit less a reserve for the store, logs and timers.
    static func defaultConnectionLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1020 }
        return max(Int(min(limit.rlim_cur, 1 << 20)) - 64, 16)
    }
}
