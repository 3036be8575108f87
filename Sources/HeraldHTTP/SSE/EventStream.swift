import CLinux
import Foundation
import Glibc
import Synchronization

/// How a stream's body is delimited.
enum StreamFraming: Sendable {
    /// HTTP/1.1: each write is one chunk; a clean end is the last chunk.
    case chunked
    /// HTTP/1.0: the body is the bytes until the connection closes.
    case closeDelimited
}

/// One SSE stream after libmicrohttpd handed its socket over. Everything but `scheduled` belongs to its
/// loop's thread (one of the engine's); other threads reach a stream only through `StreamEngine.wake`.
/// Checked in every build, at the two doors: a loop reaches its streams only through its `Owned`
/// (`ThreadBound`: its thread alone), and each function that touches a stream's state (`register`,
/// `handle`, `flush`, `drop`) checks that the stream is that loop's.
final class EventStream: @unchecked Sendable {
    // Unchecked: made on the server's thread, then owned by the engine's (handed over through its
    // inbox, whose lock orders the two); `scheduled` is the one atomic others touch.
    enum Closing: Comparable {
        /// Server shutdown: end the body cleanly.
        case graceful
        /// The client left, stopped reading or fell behind: drop the connection.
        case abort
    }

    /// Bytes kept free in front of each write buffer for its chunk-size line.
    static let headroom = 10
    /// About this many bytes are taken from the feed for one write.
    static let writeSize = 64 * 1024
    /// … and this many for a stream whose socket was full at its last write, or whose feed is still
    /// on its first events (a snapshot, a replay): a reader that is behind, or a hundred that connect
    /// at once to a large snapshot, gains nothing from more bytes waiting in the server's memory than
    /// its socket takes. Measured (Benchmarks/lobby.py snapshot): 100 observers connecting at once to
    /// 10,000 auctions raised the peak RSS by 21.3 MB with 64 KiB; 11.3 MB with 8 KiB only after a
    /// full socket (a drained write went back to 64 KiB).
    static let laggingWriteSize = 8 * 1024
    // (32 KiB for first events after a drained write was tried for the reconnect storm: 4 % less CPU
    // per resumed client, and the peak above rose from 6.0 to 7.9 MB. Left at 8 KiB. A take appends
    // whole events: a resumed stream's packed replay goes by `sendfile` from its file (`load(_:)`), or
    // without one in one write a piece, `Hub.packPiece`, 32 KiB.)
    /// A client that sends more than this after its request is not an SSE client.
    static let inputLimit: Int32 = 64 * 1024

    // Stored properties go widest first (16 bytes, then 8, 4, 1): Swift lays a class's out in the
    // order written, and a flag between two 8-byte fields costs 8 bytes. Ordered as they were read,
    // a stream was 258 bytes; as here, 215 (heaptrack, 10,000 streams), which malloc keeps in 224.
    let feed: any EventFeed
    /// The client's address, whose streams are counted (see `StreamEngine.perClientLimit`).
    let client: String
    /// The request that opened the stream, and its path, for the stream's summary.
    let requestID: String
    let path: String
    let opened = ContinuousClock.now
    /// A file's bytes to send after `out`'s (`load(_:)`), and how far into it they are sent.
    var file: FileRegion?
    var fileSent = 0
    let token: UInt64
    /// Its engine: what its feed's waker wakes it through (`wakeUp`).
    let engine: StreamEngine
    /// The bytes being written and how many of them are out; `out` is emptied (and freed) when done.
    var out: [UInt8]
    var sent = 0
    /// The wheel's seconds (of the engine's elapsed time) its end and its warning are filed under
    /// (see `StreamEngine.file`), and the feed's end as last filed there.
    var endSecond = Int64.max
    var warnSecond = Int64.max
    var deadline: Date?
    let socket: Int32
    /// The engine's loop that owns it (`StreamEngine`'s index; 4 bytes, beside `socket`'s 4).
    private let loopIndex: Int32
    var loop: Int { Int(loopIndex) }
    /// Bytes the client sent after its request (at most `inputLimit` and one read more).
    var inputReceived: Int32 = 0
    let framing: StreamFraming
    /// Whether the feed's end may move (read once: every write asks).
    let renewable: Bool
    /// Its socket's options are as accepted: Nagle off (the listener's), never corked.
    let asAccepted: Bool
    /// In the engine's inbox already: a second wake-up adds nothing.
    let scheduled = Atomic<Bool>(false)
    /// The socket was checked to be non-blocking, which `sendfile`, having no flags, needs.
    private var nonBlocking = false
    /// The socket's buffer was full: the engine waits for EPOLLOUT before writing more.
    var blocked = false
    /// The last write found the socket full: the client is behind, so less is taken at a time.
    var lagging = true
    /// The client sent its FIN (a half-close, or gone: the next write tells).
    var peerFinished = false
    var warned = false
    /// The feed is closed (`StreamEngine.closeFeed`): before the stream's last bytes are written, or when it is dropped.
    var feedClosed = false
    /// Whether its client still reads, judged each heartbeat round.
    var liveness = Liveness()
    /// Added, open, closing, ending (its last bytes queued) or closed (`StreamLife`).
    var life = StreamLife()

    /// Where the file's bytes to send end: on HTTP/1.1 after the CRLF that ends their chunk.
    private var fileEnd: Int { (file?.count ?? 0) + (framing == .chunked ? 2 : 0) }
    /// How much to take from the feed for the next write.
    var takeSize: Int { lagging || feed.catchingUp ? Self.laggingWriteSize : Self.writeSize }

    init(token: UInt64, engine: StreamEngine, socket: Int32, framing: StreamFraming, feed: any EventFeed, client: String,
         requestID: String, path: String, start: [UInt8], asAccepted: Bool = false, loop: Int = 0) {
        self.token = token
        self.engine = engine
        loopIndex = Int32(loop)
        self.asAccepted = asAccepted
        self.client = client
        self.requestID = requestID
        self.path = path
        self.socket = socket
        self.framing = framing
        self.feed = feed
        renewable = feed.renewable
        self.out = start
    }

    /// A renewal moved the feed's end from the one filed (`deadline`), and the stream is not already
    /// ending at its token's end: its end must be filed again.
    var endMoved: Bool { renewable && !life.endsAtItsToken && feed.expires != deadline }

    /// Asks its engine to write it (or close it, if its feed has finished): its feed's waker. A closure
    /// that captures the stream alone is the stream (no context of its own: 48 bytes a stream less
    /// than one that captured the engine too).
    func wakeUp() { engine.wake(self) }

    /// Whether bytes wait to be written.
    var hasPending: Bool { sent < out.count || file != nil }

    /// A new write buffer: `headroom` free bytes, then the body. One allocation, with room for a
    /// small event (`[UInt8](repeating:count:)` then `reserveCapacity` made two).
    static func buffer() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: headroom + 512) { bytes, count in
            UnsafeMutableBufferPointer(rebasing: bytes[..<headroom]).initialize(repeating: 0)
            count = headroom
        }
    }

    /// Makes `buffer` (headroom, then body bytes) the bytes to write, framed as one chunk on HTTP/1.1.
    /// `buffer` gets the old bytes: framing a buffer the caller still held was a copy of every event.
    func load(_ buffer: inout [UInt8]) {
        swap(&out, &buffer)
        sent = Self.frame(&out, framing)
    }

    /// Makes `region` the bytes to write after those pending: on HTTP/1.1 one chunk, whose size line
    /// ends `out` and whose CRLF follows the region in its file.
    func load(_ region: FileRegion) {
        if framing == .chunked { out += Array(String(region.count, radix: 16).utf8) + [0x0D, 0x0A] }
        file = region
        fileSent = 0
    }

    /// Frames the body after the headroom in place and returns where the bytes to write start.
    static func frame(_ buffer: inout [UInt8], _ framing: StreamFraming) -> Int {
        guard framing == .chunked else { return headroom }
        var size = buffer.count - headroom
        var start = headroom - 2
        buffer[start] = 0x0D
        buffer[start + 1] = 0x0A
        repeat {
            start -= 1
            buffer[start] = hexDigits[size & 0xF]
            size >>= 4
        } while size > 0
        buffer.append(0x0D)
        buffer.append(0x0A)
        return start
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Writes what is pending. Returns false when the connection failed (the stream must be dropped);
    /// otherwise `blocked` tells whether bytes are left for EPOLLOUT. `more`: another write follows
    /// at once (a replay or snapshot taken a piece at a time), so the kernel keeps these bytes to send
    /// with it (`MSG_MORE`): one segment through loopback's send and receive instead of one a piece.
    /// Measured in the reconnect storm (100 missed bids, about 38 KB a client, five pieces).
    func write(more: Bool = false) -> Bool {
        // A file's bytes follow: the kernel sends these with them.
        let flags = Int32(MSG_NOSIGNAL | MSG_DONTWAIT) | (more || file != nil ? Int32(MSG_MORE) : 0)
        while sent < out.count {
            let written = out.withUnsafeBytes { bytes in
                Glibc.send(socket, bytes.baseAddress! + sent, bytes.count - sent, flags)
            }
            if written > 0 {
                sent += written
                liveness.wrote()
                continue
            }
            if written < 0, errno == EINTR { continue }
            if written < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                blocked = true
                lagging = true
                return true
            }
            return false
        }
        if let file {
            guard makeNonBlocking() else { return false }
            while fileSent < fileEnd {
                var offset = fileSent
                let written = clinux_sendfile(socket, file.descriptor, &offset, UInt(fileEnd - fileSent))
                if written > 0 {
                    fileSent = offset
                    liveness.wrote()
                    continue
                }
                if written < 0, errno == EINTR { continue }
                if written < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    out = []
                    sent = 0
                    blocked = true
                    lagging = true
                    return true
                }
                return false
            }
            self.file = nil
        }
        out = []
        sent = 0
        blocked = false
        lagging = false
        liveness.drained()
        return true
    }

    /// Sets the socket non-blocking if it is not (libmicrohttpd's are): `sendfile` would wait otherwise.
    private func makeNonBlocking() -> Bool {
        if nonBlocking { return true }
        let flags = fcntl(socket, F_GETFL)
        guard flags >= 0 else { return false }
        if flags & O_NONBLOCK == 0, fcntl(socket, F_SETFL, flags | O_NONBLOCK) < 0 { return false }
        nonBlocking = true
        return true
    }

    /// Reads and discards what the client sent. Returns false when it sent too much or the socket failed.
    func discardInput(into scratch: UnsafeMutableRawBufferPointer) -> Bool {
        while true {
            let count = recv(socket, scratch.baseAddress, scratch.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                inputReceived += Int32(clamping: count)
                if inputReceived > Self.inputLimit { return false }
                continue
            }
            if count == 0 {
                peerFinished = true
                return true
            }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK
        }
    }
}
