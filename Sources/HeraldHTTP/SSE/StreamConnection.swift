import CMicroHTTPD
import Glibc
import Synchronization

/// A libmicrohttpd connection pointer. libmicrohttpd allows `MHD_resume_connection` from any thread;
/// every other use stays on the daemon's thread, inside `StreamConnection`'s lock.
struct ConnectionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// One SSE response in flight: the bytes waiting to be written and whether libmicrohttpd has the
/// connection suspended. The lock makes "found nothing, suspend" and "something came, resume"
/// atomic, so a wake-up is never lost and a connection is never resumed unless suspended.
final class StreamConnection: Sendable {
    enum Closing {
        /// Server shutdown: end the chunked body cleanly.
        case graceful
        /// The client left or fell behind: drop the connection.
        case abort
    }

    struct State {
        var pending: [UInt8]
        var offset = 0
        var suspended = false
        var closing: Closing?
        var heartbeatDue = false
        /// libmicrohttpd released the response: never touch the connection again.
        var released = false
    }

    let token: UInt64
    let feed: any EventFeed
    let connection: ConnectionPointer
    let socket: Int32
    /// The response is sent in chunks (an HTTP/1.1 request), so a whole chunk can be written directly.
    let chunked: Bool
    unowned let registry: StreamRegistry
    private let state: Mutex<State>

    init(token: UInt64, feed: any EventFeed, connection: ConnectionPointer, socket: Int32, preamble: [UInt8],
         chunked: Bool, registry: StreamRegistry) {
        self.registry = registry
        self.chunked = chunked
        self.token = token
        self.feed = feed
        self.connection = connection
        self.socket = socket
        self.state = Mutex(State(pending: preamble))
    }

    /// libmicrohttpd's content reader: fills `buffer`, or suspends the connection when there is nothing.
    /// Runs on the daemon's thread.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        state.withLock { state -> Int in
            if state.released { return Int(CMHD_CONTENT_READER_END_WITH_ERROR) }
            if state.offset == state.pending.count {
                state.pending.removeAll(keepingCapacity: true)
                state.offset = 0
                if let closing = state.closing {
                    return Int(closing == .graceful ? CMHD_CONTENT_READER_END_OF_STREAM : CMHD_CONTENT_READER_END_WITH_ERROR)
                }
                fill(&state, room: buffer.count)
                if state.pending.isEmpty {
                    if state.closing != nil { return Int(CMHD_CONTENT_READER_END_WITH_ERROR) }
                    // Idle: give the memory back and sleep until the feed wakes us.
                    state.pending = []
                    state.suspended = true
                    MHD_suspend_connection(connection.raw)
                    return 0
                }
            }
            let count = min(buffer.count, state.pending.count - state.offset)
            state.pending.withUnsafeBytes { bytes in
                buffer.baseAddress?.copyMemory(from: bytes.baseAddress! + state.offset, byteCount: count)
            }
            state.offset += count
            return count
        }
    }

    private func fill(_ state: inout State, room: Int) {
        if state.heartbeatDue {
            state.pending.append(contentsOf: SSEEncoder.heartbeat)
            state.heartbeatDue = false
        }
        // Coalesce what is queued into one write, up to about one buffer's worth.
        while state.pending.count < room {
            switch feed.poll(limit: 64) {
            case .frames(let frames):
                for frame in frames {
                    // One frame: share its storage instead of copying it.
                    if state.pending.isEmpty { state.pending = frame } else { state.pending.append(contentsOf: frame) }
                }
            case .idle:
                return
            case .finished:
                state.closing = .abort
                return
            }
        }
    }

    /// Resumes the connection if it is suspended. Safe from any thread, any number of times.
    func wake() {
        state.withLock { state in
            guard state.suspended, !state.released else { return }
            state.suspended = false
            MHD_resume_connection(connection.raw)
        }
    }

    /// Ends the stream at the next chance. An abort also shuts the socket down, so a connection
    /// stuck writing to a client that stopped reading fails at once instead of waiting.
    func close(_ how: Closing) {
        state.withLock { state in
            guard !state.released else { return }
            if state.closing == nil { state.closing = how }
            if how == .abort, socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        wake()
    }

    /// Sends a heartbeat comment. A suspended stream gets it written straight to its socket (as one
    /// whole chunk on HTTP/1.1): libmicrohttpd calls the reader only once everything before has been
    /// sent, and does not touch a suspended connection, so nothing can interleave, and the idle
    /// stream stays suspended (a heartbeat costs one `send`, not a resume and a suspend).
    /// Any other stream gets it with its next write.
    func heartbeat() {
        let resume = state.withLock { state -> Bool in
            guard !state.released, state.closing == nil else { return false }
            guard state.suspended, socket >= 0 else {
                state.heartbeatDue = true
                return state.suspended
            }
            return !writeHeartbeat(&state)
        }
        if resume { wake() }
    }

    /// The client closed its sending side. That is legal (a half-close) and the stream goes on; but a
    /// client that closed the whole socket answers the next bytes with a reset, which the watcher then
    /// sees. So a suspended stream is sent a heartbeat now; a busy one is writing already.
    func peerFinishedSending() {
        let resume = state.withLock { state -> Bool in
            guard !state.released, state.closing == nil, state.suspended, socket >= 0 else { return false }
            return !writeHeartbeat(&state)
        }
        if resume { wake() }
    }

    /// Writes the heartbeat to the suspended socket; false when the stream cannot go on (it is then
    /// closing and must be woken).
    private func writeHeartbeat(_ state: inout State) -> Bool {
        let bytes = chunked ? Self.heartbeatChunk : SSEEncoder.heartbeat
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        if sent == bytes.count || (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true  // sent; or the client reads nothing: it needs no heartbeat
        }
        // A part of a chunk, or an error: the stream cannot go on.
        state.closing = .abort
        shutdown(socket, Int32(SHUT_RDWR))
        return false
    }

    /// `: heartbeat` as one HTTP/1.1 chunk: size in hex, CRLF, the comment, CRLF.
    static let heartbeatChunk: [UInt8] =
        Array("\(String(SSEEncoder.heartbeat.count, radix: 16))\r\n".utf8) + SSEEncoder.heartbeat + Array("\r\n".utf8)

    /// libmicrohttpd dropped the response (client gone, error, or shutdown).
    func released() {
        state.withLock { state in
            state.released = true
            state.pending = []
        }
        feed.close()
    }
}
