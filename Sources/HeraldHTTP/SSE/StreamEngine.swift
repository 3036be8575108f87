import HeraldThreads
import CLinux
import Dispatch
import Foundation
import Synchronization

/// Every SSE stream once libmicrohttpd has handed its socket over: a few threads (`threads`, each a
/// loop with its own epoll set and its own share of the streams), no thread or timer per stream.
///
/// Each loop sleeps in `epoll_wait` on its stream sockets (edge-triggered: input, output space, the
/// peer's FIN) and on an eventfd. A publisher only signals: `signal()` writes the first loop's eventfd
/// once however many events wait, and that loop takes the fan-out's work (`fanOut`: the hub's batch of
/// events, each encoded once, with the observers it reaches). Each loop queues the batch to its own share
/// of the observers: the first loop hands the work to the others, with one wake-up each, and runs its
/// own share meanwhile. The streams a share wakes on other loops are handed to each of those loops in
/// one go; every loop then writes its woken streams' queued frames with one `send` each. Events queued
/// while a socket was busy go out together in its next write, and so do events published while the
/// loop writes (`fanOutWhileWriting`), to the streams it has not written yet. A partial write is kept
/// and finished on EPOLLOUT.
///
/// A client's FIN alone is not its leaving: it may have half-closed its sending side (legal in
/// HTTP/1.1). The stream is probed with a heartbeat; a client that closed the whole socket answers it
/// with a reset (EPOLLHUP/EPOLLERR), and only then is the stream dropped.
public final class StreamEngine: Sendable {
    /// After this many streams close and none is left on a loop, free memory goes back to the system.
    static let trimAfter = 1000
    /// Streams a loop may hold beyond the emptiest one's and still take a stream whose events it fans out.
    static let shareSlack = 64
    /// How far below the request threads a loop runs (nice steps; see `run`).
    static let loopNiceSteps: Int32 = 5
    /// How long a loop works at most before it lets its core go to a thread waiting for it (see `pause`).
    static let yieldEvery: Duration = .microseconds(100)
    /// Streams a loop writes between two looks for events published meanwhile (`fanOutWhileWriting`):
    /// a look is one atomic load.
    static let lookEvery = 32
    /// Loops at most (`WakeHold` keeps one bit for each).
    public static let threadLimit = 64
    /// The loops a server runs by default: one for each core it may run on (its CPU affinity), up to
    /// `threadLimit`. Measured on 2 cores (`git show dad6eb7:BENCHMARKS.md`): two loops halve the p99 of delivery at 5 bids
    /// a second to 10,000 watchers, where one loop left the second core to the clients.
    public static var defaultThreads: Int { min(Int(clinux_usable_cores()), threadLimit) }

    /// Streams beyond this many are refused (each holds an open file).
    let limit: Int
    /// Streams one client address may hold; nil: no limit.
    let perClientLimit: Int?
    /// Told of each stream's end and of the events written.
    let observer: (any HTTPObserver)?
    /// Open streams by client address (for `perClientLimit`, and the server's connections per address).
    let clients = Lock<[String: Int]>([:])
    /// The engine's time (heartbeats, the tick, stream expiry).
    let clock: any StreamClock
    var elapsed: Duration { clock.elapsed }
    /// How long before its end a stream is warned (`EventFeed.warnExpiring`), in seconds.
    let expiryWarning: Double
    let streamCount = Atomic<Int>(0)
    private let nextToken = Atomic<UInt64>(1)
    /// Whether a loop looks for events published while it writes (`fanOutWhileWriting`); false only
    /// to compare the paths.
    let fansOutWhileWriting: Bool
    /// Whether a batch wakes only the loops whose share holds an observer of it (`FanOutWork.shares`),
    /// or every loop; false only to compare the paths.
    let wakesOnlyLoopsWithObservers: Bool
    /// The paths of streams, each kept once: streams ask for a few paths, and a path of more than 15
    /// bytes is a heap string of its own.
    private let paths = Lock(Interned<String>())
    let started = Atomic<Bool>(false)
    let stopped = Atomic<Bool>(false)
    /// The loops; the first takes the fan-out's work (each runs its share) and runs the tick.
    let loops: [Loop]

    /// - Parameter threads: loops, each a thread with its own epoll set and share of the streams (1 to `threadLimit`).
    init(limit: Int, perClientLimit: Int? = nil, observer: (any HTTPObserver)? = nil, clock: any StreamClock = SystemStreamClock(),
         expiryWarning: Duration = .seconds(60), threads: Int = 1, fansOutWhileWriting: Bool = true,
         wakesOnlyLoopsWithObservers: Bool = true) {
        self.limit = limit
        self.fansOutWhileWriting = fansOutWhileWriting
        self.wakesOnlyLoopsWithObservers = wakesOnlyLoopsWithObservers
        self.expiryWarning = expiryWarning.inSeconds
        self.clock = clock
        self.perClientLimit = perClientLimit
        self.observer = observer
        let count = min(max(threads, 1), Self.threadLimit)
        loops = (0..<count).map { Loop(index: $0, of: count) }
    }

    /// The engine of a server with `configuration`, told of each stream's end by `observer`.
    public convenience init(for configuration: HTTPServerConfiguration, observer: (any HTTPObserver)?) {
        self.init(limit: HTTPServer.streamLimit(configuration.streamLimit ?? configuration.connectionLimit),
                  perClientLimit: configuration.streamsPerClient, observer: observer,
                  clock: configuration.streamClock, expiryWarning: configuration.expiryWarning,
                  threads: configuration.streamThreads, fansOutWhileWriting: configuration.fanOutWhileWriting,
                  wakesOnlyLoopsWithObservers: configuration.wakeOnlyLoopsWithObservers)
    }

    /// Open streams.
    public var count: Int { streamCount.load(ordering: .relaxed) }

    /// Open streams on each loop, in order.
    public var countsByThread: [Int] { loops.map { $0.held.load(ordering: .relaxed) } }

    /// One loop's part of fanning a batch of events out: `share` of `shares` of the observers. It calls
    /// `pause` every few observers, holding no lock, where the loop may let its core go (see `run`).
    public typealias FanOutShare = @Sendable (_ share: Int, _ shares: Int, _ pause: () -> Void) -> Void

    /// A batch's fan-out: each loop's part of it, and the loops that have a part (bit i: loop i's share
    /// holds an observer the batch reaches; every bit: not told). Only those loops are woken for it.
    public struct FanOutWork: Sendable {
        let run: FanOutShare
        let shares: UInt64

        public init(shares: UInt64 = .max, _ run: @escaping FanOutShare) {
            self.run = run
            self.shares = shares
        }
    }

    /// What the first loop does besides writing its streams, given to `start`.
    struct Duties {
        /// The fan-out: runs on the first loop's thread each time it wakes, before it writes, and returns
        /// the work for the events waiting in as many shares as there are loops (nil: none). Every loop
        /// with a part runs its own share of that work (the first at once, the others as soon as they
        /// wake, each in the order taken), so the loops queue one batch to their observers together, and
        /// the wakers then `wake` the streams.
        var fanOut: (@Sendable (_ shares: Int) -> FanOutWork?)?
        /// Runs about once a second.
        var everySecond: (@Sendable () -> Void)?
    }

    /// Wakes the first loop's thread (which fans out). Cheap when it is awake already: one eventfd
    /// write per sleep.
    public func signal() {
        loops[0].signal()
    }

    /// Wakes the first loop's thread, unless the caller is `hold`'s thread during the hold: then the
    /// wake-up waits for `release(hold)`.
    public func signal(unlessHeldBy hold: WakeHold) {
        if hold.keep(0) { return }
        signal()
    }

    /// Ends `hold` and sends the wake-ups it kept, if any. On the hold's thread.
    public func release(_ hold: WakeHold) {
        var wanted = hold.end()
        while wanted != 0 {
            let index = wanted.trailingZeroBitCount
            wanted &= wanted - 1
            if index < loops.count { loops[index].signal() }
        }
    }

    /// Why `add` refused a stream.
    enum Refusal: Error {
        /// The engine holds `limit` streams, or is stopping.
        case full
        /// The client holds `perClientLimit` streams.
        case clientFull
    }

    /// Takes over `socket` (a descriptor of the engine's own) and starts writing `start` (then `file`) to it, on the
    /// loop that fans its events out (unless that one holds `shareSlack` more than the emptiest), else on
    /// the loop that holds the fewest streams; that loop is woken once `hold` (the request thread's) is
    /// released. Throws, and closes nothing, when the engine or the client's share is full, or it is stopped.
    func add(socket: Int32, framing: StreamFraming, feed: any EventFeed, client: String, requestID: String, path: String,
             start: [UInt8], file: FileRegion? = nil, hold: WakeHold? = nil, asAccepted: Bool = false) throws(Refusal) {
        let taken = clients.withLock { clients -> Bool in
            guard clients[client, default: 0] < perClientLimit ?? Int.max else { return false }
            clients[client, default: 0] += 1
            return true
        }
        guard taken else { throw .clientFull }
        guard streamCount.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            streamCount.wrappingSubtract(1, ordering: .relaxed)
            release(client)
            throw .full
        }
        // The request thread alone adds: the counts it compares move only down meanwhile.
        var loop = loops[0]
        for other in loops.dropFirst() where other.held.load(ordering: .relaxed) < loop.held.load(ordering: .relaxed) { loop = other }
        // The loop that fans the stream's events out (`Hub.deliver(_:share:of:)`: the key modulo the
        // loops), unless it holds many more streams than the emptiest.
        if let key = feed.shareKey {
            let sharing = loops[Int(key % UInt64(loops.count))]
            if sharing.held.load(ordering: .relaxed) <= loop.held.load(ordering: .relaxed) + Self.shareSlack { loop = sharing }
        }
        loop.held.wrappingAdd(1, ordering: .relaxed)
        let stream = EventStream(token: nextToken.wrappingAdd(1, ordering: .relaxed).oldValue, engine: self, socket: socket,
                                 framing: framing, feed: feed, client: client, requestID: requestID, path: paths.withLock { $0(path) }, start: start,
                                 asAccepted: asAccepted, loop: loop.index)
        if let file { stream.load(file) }
        // Strong references (the stream holds the engine): the feed drops its waker when it ends, and
        // the loop the stream when it is closed, which break the cycles.
        feed.setWaker { [stream] _ in stream.wakeUp() }
        guard post(to: loop, { $0.added.append(stream) }) else {
            forget(client, on: loop)
            throw .full
        }
        if let hold, hold.keep(loop.index) { return }
        loop.signal()
    }

    /// Streams `client` holds.
    func held(by client: String) -> Int { clients.withLock { $0[client, default: 0] } }

    /// One stream fewer: on `loop`, in all, and of `client` (one added, or one dropped).
    func forget(_ client: String, on loop: Loop) {
        loop.held.wrappingSubtract(1, ordering: .relaxed)
        streamCount.wrappingSubtract(1, ordering: .relaxed)
        release(client)
    }

    /// One stream of `client` fewer.
    private func release(_ client: String) {
        clients.withLock { clients in
            let left = clients[client, default: 1] - 1
            clients[client] = left > 0 ? left : nil
        }
    }

    /// Asks for `stream` to be written (or closed, if its feed has finished). Any thread.
    /// After `stop`, nothing is added (see `post`).
    /// On the stream's own loop (where its share of fan-out runs) the stream goes straight to the loop's
    /// list; on another loop's thread it is staged there, and handed over with the others woken in
    /// the same pass (see `handOverStaged`).
    func wake(_ stream: EventStream) {
        guard !stream.scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let target = loops[stream.loop]
        if target.thread.isCurrent {
            // A stream closed here (its feed's end calls the waker) needs no writing; after `stop`,
            // nothing is kept, for the reason `post` gives.
            guard !stream.life.isClosed, !stopped.load(ordering: .acquiring) else { return }
            target.owned.woken.append(stream)
            return
        }
        if loops.count > 1, let current = loops.first(where: { $0.thread.isCurrent }) {
            current.owned.staged[target.index].append(stream)
            return
        }
        if post(to: target, { $0.woken.append(stream) }) { target.signal() }
    }

    /// Makes `change` to `loop`'s inbox, unless the engine has stopped (then returns false): the inbox
    /// would keep what it is given, and through a stream's feed the hub, which holds the engine. The
    /// check is under the inbox's lock, which the loop's thread takes to empty the inbox for the last
    /// time once `stopped` is set. The caller signals the loop.
    func post(to loop: Loop, _ change: (inout Inbox) -> Void) -> Bool {
        loop.inbox.withLock { inbox -> Bool in
            guard !stopped.load(ordering: .acquiring) else { return false }
            change(&inbox)
            return true
        }
    }

    /// Ends every stream: `.graceful` writes what is queued and then the body's end; `.abort` drops them.
    func closeAll(_ how: EventStream.Closing) {
        for loop in loops {
            loop.inbox.withLock { $0.closeAll = max($0.closeAll ?? how, how) }
            loop.signal()
        }
    }

    /// Starts the loops' threads, which also send the heartbeats; the first also runs `duties` (the
    /// fan-out's `take`, and what runs once a second), until `stop`.
    func start(heartbeat: Duration?, duties: Duties = Duties()) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let interval = heartbeat.flatMap { $0 > .zero ? $0 : nil }
        for loop in loops {
            let thread = Thread { [self] in run(loop, heartbeat: interval, duties: loop.index == 0 ? duties : Duties()) }
            thread.name = loop.thread.name
            thread.start()
        }
    }

    /// Stops the threads; streams still open are dropped. The duties are let go with the first loop's
    /// thread: they usually hold what holds the engine (the hub, whose delivery signal wakes it).
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiring) else { return }
        guard started.load(ordering: .relaxed) else { return }
        // Woken whatever their flag says: each must see `stopped`.
        for loop in loops { loop.wakeNow() }
        for loop in loops { loop.done.wait() }
    }
}
