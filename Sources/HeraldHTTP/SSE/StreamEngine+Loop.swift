import CLinux
import Dispatch
import Foundation
import HeraldThreads
import Synchronization

// The engine's loops: each one's own state, and what its thread does (see `StreamEngine`).
extension StreamEngine {
    struct Inbox {
        var added: [EventStream] = []
        var woken: [EventStream] = []
        var closeAll: EventStream.Closing?
        /// Fan-out work the first loop took, for this loop's share, in the order taken.
        var fanOut: [FanOutShare] = []

        var isEmpty: Bool { added.isEmpty && woken.isEmpty && closeAll == nil && fanOut.isEmpty }
    }

    /// A loop's thread's own state (bound to it).
    final class Owned {
        var streams: [UInt64: EventStream] = [:]
        var ready: [EventStream] = []
        /// Streams woken on the loop's own thread (by fan-out), which need no inbox and no signal.
        var woken: [EventStream] = []
        /// Streams of other loops woken on this one's thread (by fan-out, on the first loop), handed to
        /// each of those loops in one go: by loop index.
        var staged: [[EventStream]]
        /// Streams that end when their token expires.
        var expiry = ExpiryWheel()
        /// Streams closed since malloc last gave memory back to the system.
        var closedSinceTrim = 0
        /// What the loop does besides writing its streams (the first loop's), while it runs.
        var duties = Duties()
        /// A write buffer (`EventStream.buffer()`) that a take left empty, for the next take; or none.
        /// The second take of nearly every wake finds nothing: it no longer allocates and frees one.
        var spare: [UInt8] = []

        init(loops: Int) { staged = Array(repeating: [], count: loops) }
    }

    /// One thread of the engine: its epoll set, its eventfd, its inbox and its streams.
    final class Loop: Sendable {
        let index: Int
        let epoll: Int32
        let wakeup: Int32
        let inbox = Lock(Inbox())
        let signaled = Atomic<Bool>(false)
        /// Streams this loop holds or is about to (for choosing the loop of the next).
        let held = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        /// The loop's thread, which owns `Owned` and every stream once it is registered.
        let thread: OwnerThread
        let bound: ThreadBound<Owned>
        /// The loop thread's state; a debug build stops when another thread reaches for it.
        var owned: Owned { bound.withValue { $0 } }

        init(index: Int, of count: Int) {
            self.index = index
            // The first loop keeps the engine's old name: it is the one that fans out.
            thread = OwnerThread(name: index == 0 ? "herald-streams" : "herald-streams\(index)")
            bound = ThreadBound(Owned(loops: count), owner: thread)
            epoll = cepoll_create()
            wakeup = cepoll_eventfd()
            _ = cepoll_add(epoll, wakeup, CEPOLL_IN, 0)
        }

        deinit {
            close(epoll)
            close(wakeup)
        }

        /// Wakes the loop's thread. Cheap when it is awake already: one eventfd write per sleep.
        func signal() {
            guard !signaled.exchange(true, ordering: .acquiringAndReleasing) else { return }
            wakeNow()
        }

        /// Writes the loop's eventfd, whether or not a wake-up is pending.
        func wakeNow() { cepoll_eventfd_signal(wakeup) }
    }

    /// What a loop keeps from one pass to the next: epoll's answer buffers, a scratch buffer for reads,
    /// the heartbeat schedule and the time of the next once-a-second tick.
    struct Pass {
        var tokens = [UInt64](repeating: 0, count: 512)
        var events = [UInt32](repeating: 0, count: 512)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        var heartbeats: HeartbeatSchedule?
        var nextTick: Duration

        init(heartbeat: Duration?, at now: Duration) {
            heartbeats = heartbeat.map { HeartbeatSchedule(every: $0, from: now) }
            nextTick = now + .seconds(1)
        }

        func deallocate() { scratch.deallocate() }
    }

    func run(_ loop: Loop, heartbeat: Duration?, duties: Duties) {
        loop.thread.bindToCurrentThread()
        // `sendfile` (a packed replay) has no MSG_NOSIGNAL: to a client that left, it raises SIGPIPE on
        // this thread, which by default ends the process. Blocked here, it stays pending and harmless,
        // and the call fails with EPIPE, as a send does (the `herald` command ignores it outright).
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)
        // As a batch thread a loop, woken while a request is being answered, does not take the core
        // from the request thread (no wake-up preemption). Measured with 10,000 watchers: bid p99
        // 0.8 ms as a batch thread, 4.2 ms as an ordinary one.
        _ = clinux_batch_this_thread()
        // And a few nice steps below the request threads, which then count as owed time sooner; a loop
        // still gets a quarter of a core that a saturating request load shares with it (weights 335 and
        // 1024). `git show dad6eb7:BENCHMARKS.md`, "Lobbies and catch-up": the lobby's bid p90 2.9–4.3 → 0.9–1.05 ms. The
        // kernel still lets a running loop finish its slice before a woken thread runs: the loop also
        // lets its core go every `yieldEvery` of work (`pause`), which took the p99 the rest of the way.
        _ = clinux_lower_this_thread(Self.loopNiceSteps)
        loop.owned.duties = duties
        var pass = Pass(heartbeat: heartbeat, at: elapsed)
        defer { pass.deallocate() }
        while !stopped.load(ordering: .acquiring), runPass(loop, &pass, waiting: true) {}
        finish(loop)
    }

    /// One pass of `loop`: waits for its sockets, its wake-up or its next heartbeat (at most a second;
    /// not at all unless `waiting`), then handles what came, runs its fan-out, takes its inbox, writes
    /// its ready streams, sends the heartbeats due and, once a second, ends expired streams and runs
    /// the once-a-second duties. False when epoll failed (the loop then ends).
    func runPass(_ loop: Loop, _ pass: inout Pass, waiting: Bool) -> Bool {
        let owned = loop.owned
        // At least once a second, so that a wake-up deferred by a request thread whose answer cannot
        // be sent (its client stopped reading) delays delivery by a second at most.
        var timeout: Int32 = 1000
        if !waiting || !owned.ready.isEmpty || !owned.woken.isEmpty || !loop.inbox.withLock({ $0.isEmpty }) {
            timeout = 0
        } else if let left = pass.heartbeats?.wait(at: elapsed) {
            timeout = left <= .zero ? 0 : Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
        }
        let count = pass.tokens.withUnsafeMutableBufferPointer { tokens in
            pass.events.withUnsafeMutableBufferPointer { cepoll_wait(loop.epoll, tokens.baseAddress, $0.baseAddress, 512, timeout) }
        }
        if count < 0, errno != EINTR { return false }
        for index in 0..<max(Int(count), 0) {
            if pass.tokens[index] == 0 {
                cepoll_eventfd_drain(loop.wakeup)
                continue
            }
            guard let stream = owned.streams[pass.tokens[index]] else { continue }
            handle(pass.events[index], on: stream, in: loop, scratch: pass.scratch)
        }
        loop.signaled.store(false, ordering: .releasing)
        var yielded = ContinuousClock.now
        takeFanOut(loop, yielded: &yielded)
        let (added, woken, closeAll, fanOut) = loop.inbox.withLock { inbox in
            defer { inbox = Inbox() }
            return (inbox.added, inbox.woken, inbox.closeAll, inbox.fanOut)
        }
        for work in fanOut { work(loop.index, loops.count) { pause(since: &yielded) } }
        for stream in added { register(stream, in: loop) }
        for stream in woken { owned.woken.append(stream) }
        for stream in owned.woken {
            stream.scheduled.store(false, ordering: .releasing)
            owned.ready.append(stream)
        }
        owned.woken.removeAll(keepingCapacity: true)
        if let closeAll {
            for stream in owned.streams.values {
                stream.life.close(closeAll, reason: .shutdown, replacing: true)
                owned.ready.append(stream)
            }
        }
        let ready = owned.ready
        owned.ready.removeAll(keepingCapacity: true)
        var sinceLook = 0
        for stream in ready where stream.life.isLive {
            flush(stream, in: loop)
            pause(since: &yielded)
            sinceLook += 1
            if sinceLook == Self.lookEvery, fansOutWhileWriting {
                sinceLook = 0
                if loop.signaled.load(ordering: .acquiring) { fanOutWhileWriting(loop, yielded: &yielded) }
            }
        }
        if pass.heartbeats?.take(at: elapsed) == true { heartbeatRound(loop, yielded: &yielded) }
        if elapsed >= pass.nextTick {
            pass.nextTick = elapsed + .seconds(1)
            endExpired(loop)
            owned.duties.everySecond?()
        }
        handOverStaged(from: loop)
        return true
    }

    /// The loop's end: its streams are dropped, and nothing it held is kept.
    func finish(_ loop: Loop) {
        let owned = loop.owned
        for stream in Array(owned.streams.values) { drop(stream, .shutdown, in: loop) }
        // A stream left in a list would hold its feed and, through it, the hub, which holds the engine;
        // so would the duties.
        owned.duties = Duties()
        owned.ready.removeAll()
        owned.woken.removeAll()
        for index in owned.staged.indices { owned.staged[index].removeAll() }
        // Whatever came in after the last pass: streams never registered are closed, wake-ups dropped.
        for stream in loop.inbox.withLock({ inbox in defer { inbox = Inbox() }; return inbox.added }) {
            stream.feed.close()
            close(stream.socket)
        }
        loop.done.signal()
    }

    /// On the first loop: takes the events waiting in the hub, hands the other loops their shares of the
    /// fan-out and queues its own; a loop whose share holds no observer of the batch is not woken for
    /// it (a countdown's tick watched by one stream wakes one loop).
    func takeFanOut(_ loop: Loop, yielded: inout ContinuousClock.Instant) {
        guard let work = loop.owned.duties.fanOut?(loops.count) else { return }
        let wanted = wakesOnlyLoopsWithObservers ? work.shares : .max
        // The other loops queue their shares while this one queues its own.
        for other in loops.dropFirst() where wanted & (1 << UInt64(other.index)) != 0 && post(to: other, { $0.fanOut.append(work.run) }) {
            other.signal()
        }
        if wanted & 1 != 0 { work.run(0, loops.count) { pause(since: &yielded) } }
        // The other loops start writing while this one writes its own streams.
        handOverStaged(from: loop)
    }

    /// Queues the events published since the pass began, while the loop still writes its streams. A
    /// stream not yet written in the pass then takes them with the events it was woken for, in the
    /// same write; one written already is woken again, as it would be after the pass. When the events
    /// come faster than a pass writes every stream (a fan-out to 10,000 that takes longer than the
    /// time between bids), each stream is written once a pass with everything that is new, and an
    /// event waits at most one pass; queued after the pass, it waited for the rest of that pass, then
    /// for a whole one of its own. Only the fan-out is taken here; what else the inbox holds waits for
    /// the next pass, which does not sleep while it holds anything.
    func fanOutWhileWriting(_ loop: Loop, yielded: inout ContinuousClock.Instant) {
        // Before the takes: a signal after them sets it again, and is seen by a later look or pass.
        loop.signaled.store(false, ordering: .releasing)
        takeFanOut(loop, yielded: &yielded)
        let shares = loop.inbox.withLock { inbox in
            defer { inbox.fanOut = [] }
            return inbox.fanOut
        }
        for work in shares { work(loop.index, loops.count) { pause(since: &yielded) } }
    }

    /// A point between two pieces of a loop's work (a stream written, a few observers queued to): once
    /// `yieldEvery` has passed since the last, the loop lets its core go to any thread waiting for it
    /// (`sched_yield`; with none, it goes straight on). A thread that a request wakes on the loop's core
    /// (libmicrohttpd's, the writer, libmicrohttpd's again to answer) then runs within about that
    /// time, not after the rest of the slice that the kernel protects for a running thread (EEVDF's
    /// RUN_TO_PARITY: up to a 4 ms tick, measured in `git show dad6eb7:BENCHMARKS.md`, "Lobbies and catch-up").
    @inline(__always)
    func pause(since last: inout ContinuousClock.Instant) {
        let now = ContinuousClock.now
        guard now - last >= Self.yieldEvery else { return }
        clinux_yield()
        last = now
    }

    /// Gives each other loop the streams of its that were woken on this loop's thread: one lock and one
    /// wake-up per loop, however many streams.
    func handOverStaged(from loop: Loop) {
        guard loops.count > 1 else { return }
        let owned = loop.owned
        for index in owned.staged.indices where !owned.staged[index].isEmpty {
            let target = loops[index]
            let streams = owned.staged[index]
            owned.staged[index].removeAll(keepingCapacity: true)
            if post(to: target, { $0.woken.append(contentsOf: streams) }) { target.signal() }
        }
    }

    func register(_ stream: EventStream, in loop: Loop) {
        precondition(stream.loop == loop.index, "a stream of loop \(stream.loop) touched by loop \(loop.index)")
        // Two system calls saved on a socket whose options are as accepted (Nagle off from the listener).
        if !stream.asAccepted { clinux_send_immediately(stream.socket) }
        guard cepoll_add(loop.epoll, stream.socket, CEPOLL_IN | CEPOLL_OUT | CEPOLL_RDHUP | CEPOLL_ET, stream.token) == 0 else {
            _ = stream.life.drop()
            stream.feed.close()
            close(stream.socket)
            forget(stream.client, on: loop)
            return
        }
        _ = stream.life.register()
        loop.owned.streams[stream.token] = stream
        loop.owned.ready.append(stream)
        file(stream, in: loop)
    }

    /// Files the stream's end, and its warning, in the expiry wheel. Filed again when a renewable
    /// feed's end moved: an entry of an end that moved finds its stream not due, and does nothing.
    func file(_ stream: EventStream, in loop: Loop) {
        stream.deadline = stream.feed.expires
        stream.warned = false
        guard let expires = stream.deadline else {
            (stream.endSecond, stream.warnSecond) = (.max, .max)
            return
        }
        // One reading of both: the second filed and the time left must come from the same moment.
        let (now, date) = clock.reading
        let left = expires.timeIntervalSince(date)
        stream.endSecond = loop.owned.expiry.add(stream.token, secondsLeft: left, at: now)
        // Opened (or renewed) with less time than the warning: warned at the next tick.
        stream.warnSecond = loop.owned.expiry.add(stream.token, secondsLeft: max(left - expiryWarning, 0), at: now)
    }

    /// Warns each stream whose end is near, and ends, cleanly, each whose token has expired: what is
    /// queued goes out, then the feed's `expired` bytes, then the body's end. The wheel gives a stream
    /// at the first tick at or past the second its end (or warning) is filed under, the first whole
    /// second at or past it: a stream is due when that second has come. An entry of an end that
    /// moved (a renewal filed the stream again, under later seconds) finds it not due, and does
    /// nothing. (Compared as fractions of a second, read apart from the tick's second, an end could
    /// fall between the two and its entry be taken, not due, and never again: the stream then stayed
    /// open past its token's end.)
    func endExpired(_ loop: Loop) {
        let second = elapsed.components.seconds
        for token in loop.owned.expiry.take(through: second) {
            guard let stream = loop.owned.streams[token], stream.deadline != nil else { continue }
            // A renewal answered before this tick whose wake-up this loop has not yet taken: the end
            // it moved is filed now, or the stream would end at the end its client just replaced.
            if stream.endMoved { file(stream, in: loop) }
            if stream.endSecond <= second {
                stream.life.close(.graceful, reason: stream.feed.ending ?? .expired)
                loop.owned.ready.append(stream)
            } else if stream.warnSecond <= second, !stream.warned {
                stream.warned = true
                if stream.feed.warnExpiring() { loop.owned.ready.append(stream) }
            }
        }
    }

    /// `: heartbeat`, in a write buffer.
    static let heartbeatBuffer: [UInt8] = EventStream.buffer() + SSEEncoder.heartbeat

    /// The last chunk of a chunked body.
    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

}
