import CLinux
import Dispatch
import Foundation
import HeraldThreads
import Synchronization

// A stream on its loop: its socket's readiness handled, its queue flushed, heartbeats, and its end.
extension StreamEngine {
    func handle(_ bits: UInt32, on stream: EventStream, in loop: Loop, scratch: UnsafeMutableRawBufferPointer) {
        precondition(stream.loop == loop.index, "a stream of loop \(stream.loop) touched by loop \(loop.index)")
        if bits & (CEPOLL_HUP | CEPOLL_ERR) != 0 {
            drop(stream, .clientLeft, in: loop)
            return
        }
        if bits & (CEPOLL_IN | CEPOLL_RDHUP) != 0 {
            let wasFinished = stream.peerFinished
            guard stream.discardInput(into: scratch) else {
                drop(stream, .clientLeft, in: loop)
                return
            }
            if stream.peerFinished, !stream.feed.heartbeats {
                // A held request's client half-closed (HTTP/1.1 allows it after the request), or left:
                // it gets the answer as it stands now, as at the wait's end; one that is gone resets.
                stream.life.close(.graceful, reason: nil)
                loop.owned.ready.append(stream)
                return
            }
            if stream.peerFinished, !wasFinished, !stream.hasPending {
                // Half-closed, or gone: a heartbeat to a closed socket is answered with a reset.
                var beat = Self.heartbeatBuffer
                stream.load(&beat)
                guard stream.write() else {
                    drop(stream, .clientLeft, in: loop)
                    return
                }
            }
        }
        if bits & CEPOLL_OUT != 0, stream.blocked {
            stream.blocked = false
            loop.owned.ready.append(stream)
        }
    }

    /// Writes what the stream has pending, then what its feed has queued, until the feed is idle or
    /// the socket is full. A stream with much queued yields after a few writes, so one busy client
    /// cannot hold up the others.
    func flush(_ stream: EventStream, in loop: Loop) {
        precondition(stream.loop == loop.index, "a stream of loop \(stream.loop) touched by loop \(loop.index)")
        if stream.life.closing == .abort {
            drop(stream, stream.life.reason ?? .shutdown, in: loop)
            return
        }
        // A renewal moved the end (and woke the stream): file it again, unless it is ending already.
        if stream.endMoved { file(stream, in: loop) }
        guard !stream.blocked else { return }
        for _ in 0..<4 {
            if stream.hasPending {
                // While first events remain untaken, the next take has some: this write is not the last.
                guard stream.write(more: stream.feed.catchingUp) else {
                    drop(stream, .clientLeft, in: loop)
                    return
                }
                if stream.blocked { return }
            }
            if stream.life.isEnding {
                finish(stream, in: loop)
                return
            }
            var buffer = loop.owned.spare.isEmpty ? EventStream.buffer() : loop.owned.spare
            loop.owned.spare = []
            let before = stream.feed.eventsTaken
            // A packed replay may come as a file, sent after the buffer's bytes.
            var file: FileRegion?
            let poll = stream.feed.take(into: &buffer, limit: stream.takeSize, file: &file)
            if let observer {
                let taken = stream.feed.eventsTaken - before
                if taken > 0 { observer.delivered(taken) }
            }
            switch poll {
            case .taken:
                // An empty chunk would end the body.
                if buffer.count > EventStream.headroom { stream.load(&buffer) }
                if let file { stream.load(file) }
            case .complete:
                stream.life.feedCompleted(stream.feed.ending)
                if buffer.count > EventStream.headroom { stream.load(&buffer) }
                if let file { stream.load(file) }
                closeFeed(stream)
                if stream.framing == .chunked { stream.out += Self.lastChunk }
            case .idle:
                if buffer.count == EventStream.headroom { swap(&loop.owned.spare, &buffer) }
                if case .writeLast(let expired) = stream.life.feedIdle() {
                    var last = EventStream.buffer()
                    // Ended by its deadline (its token, or an administrator who moved it to now): the feed says so last.
                    if expired { stream.feed.expired(into: &last) } else { stream.feed.last(into: &last) }
                    closeFeed(stream)
                    if last.count > EventStream.headroom { stream.load(&last) }
                    if stream.framing == .chunked { stream.out += Self.lastChunk }
                }
                if !stream.life.isEnding { return }
            case .finished:
                drop(stream, stream.feed.overflowed ? .slowConsumer : .finished, in: loop)
                return
            }
        }
        loop.owned.ready.append(stream)
    }

    /// The body's end is out: close the sending side, then the socket.
    func finish(_ stream: EventStream, in loop: Loop) {
        drop(stream, stream.life.reason ?? .finished, in: loop, shuttingDown: true)
    }

    /// A heartbeat comment to every stream that wrote nothing since the last round; a stream that
    /// could not write through two rounds has a client that stopped reading, and is dropped (it
    /// resumes with `Last-Event-ID` when it reconnects).
    func heartbeatRound(_ loop: Loop, yielded: inout ContinuousClock.Instant) {
        for stream in Array(loop.owned.streams.values) where stream.feed.heartbeats {
            pause(since: &yielded)
            switch stream.liveness.round(blocked: stream.blocked, busy: stream.hasPending || stream.life.isEnding) {
            case .nothing: continue
            case .stoppedReading: drop(stream, .slowConsumer, in: loop)
            case .heartbeat:
                var beat = Self.heartbeatBuffer
                stream.load(&beat)
                if !stream.write() { drop(stream, .clientLeft, in: loop) } else { stream.liveness.sentHeartbeat() }
            }
        }
    }

    /// Ends the feed (which removes the observer), then closes the socket, and tells why.
    /// Closes the stream's feed (its subscription, renewal lease and presence), once. A stream that ends
    /// cleanly closes it before its last bytes are written, any other when it is dropped, before its
    /// socket: a client that sees its stream end may at once renew it or resume it, and must find it
    /// gone (closed after the last chunk was written, a renewal sent on reading it was taken, 204, once
    /// in a fresh-clone run and once under a parallel test run).
    func closeFeed(_ stream: EventStream) {
        guard !stream.feedClosed else { return }
        stream.feedClosed = true
        stream.feed.close()
    }

    func drop(_ stream: EventStream, _ reason: StreamSummary.End, in loop: Loop, shuttingDown: Bool = false) {
        precondition(stream.loop == loop.index, "a stream of loop \(stream.loop) touched by loop \(loop.index)")
        guard stream.life.drop() else { return }
        observer?.streamEnded(StreamSummary(requestID: stream.requestID, client: stream.client, path: stream.path,
                                            duration: stream.opened.duration(to: .now), events: stream.feed.eventsTaken, end: reason))
        closeFeed(stream)
        _ = cepoll_remove(loop.epoll, stream.socket)
        if shuttingDown { shutdown(stream.socket, Int32(SHUT_WR)) }
        close(stream.socket)
        stream.out = []
        stream.file = nil
        loop.owned.streams.removeValue(forKey: stream.token)
        forget(stream.client, on: loop)
        loop.owned.closedSinceTrim += 1
        if loop.owned.streams.isEmpty, loop.owned.closedSinceTrim >= Self.trimAfter {
            // Many subscribers gone at once: glibc keeps their freed memory unless asked to return it.
            loop.owned.closedSinceTrim = 0
            _ = clinux_malloc_trim()
        }
    }
}
