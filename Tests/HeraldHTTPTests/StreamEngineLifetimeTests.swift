import CLinux
import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Synchronization
import Testing

/// What the stream engine keeps after it stops: nothing of its streams. A stream kept would hold its
/// feed, and through a real feed the hub, whose delivery signal holds the engine: a cycle that outlives
/// the server (AddressSanitizer's leak check found one at shutdown with 1,000 streams).
@Suite struct StreamEngineLifetimeTests {
    /// A feed whose end calls its waker, as a hub subscription's does.
    final class WakingFeed: EventFeed, @unchecked Sendable {
        // Unchecked: the waker is set once before the engine has the stream; the lock guards it after.
        private let waker = Lock<(@Sendable (Bool) -> Void)?>(nil)
        func take(into out: inout [UInt8], limit: Int) -> FeedPoll { .idle }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) { self.waker.withLock { $0 = waker } }
        func close() { waker.withLock { waker in defer { waker = nil }; return waker }?(true) }
    }

    /// A feed that ends with its first take (`.complete`), or with the engine's `closeAll(.graceful)`,
    /// and whose close takes a while: it says whether it had finished closing.
    final class SlowClosingFeed: EventFeed, @unchecked Sendable {
        let completes: Bool
        private let closed = Atomic<Bool>(false)
        init(completes: Bool) { self.completes = completes }
        var isClosed: Bool { closed.load(ordering: .acquiring) }
        func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
            guard completes else { return .idle }
            out += Array("data: last\n\n".utf8)
            return .complete
        }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) {}
        func last(into out: inout [UInt8]) { out += Array("event: bye\ndata: {}\n\n".utf8) }
        func close() {
            Thread.sleep(forTimeInterval: 0.3)
            closed.store(true, ordering: .releasing)
        }
    }

    /// A client that reads its stream's end (the last chunk) may at once renew or resume it, and must
    /// find it gone: the feed (which holds the renewal lease and the subscription) is closed before
    /// the stream's last bytes are written, not after. With the close after the write, the client read
    /// the end 0.3 s before the feed was closed.
    @Test func aStreamThatEndsCleanlyClosesItsFeedBeforeItsLastBytes() throws {
        let engine = StreamEngine(limit: 10)
        engine.start(heartbeat: nil)
        defer { engine.stop() }
        for completes in [true, false] {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[1]) }
            var wait = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fds[1], SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            let feed = SlowClosingFeed(completes: completes)
            try engine.add(socket: fds[0], framing: .chunked, feed: feed, client: "test", requestID: "r", path: "/", start: [])
            if !completes { engine.closeAll(.graceful) }
            let lastChunk = Array("0\r\n\r\n".utf8)
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !received.suffix(lastChunk.count).elementsEqual(lastChunk) {
                let count = read(fds[1], &chunk, chunk.count)
                guard count > 0 else { break }
                received += chunk[0..<count]
            }
            #expect(received.suffix(lastChunk.count).elementsEqual(lastChunk), "the body's last chunk came")
            #expect(feed.isClosed, "the feed was closed before the end was written (completes: \(completes))")
        }
    }

    @Test func streamsEndedAtStopAreLetGo() throws {
        weak var kept: WakingFeed?
        let engine = StreamEngine(limit: 100)
        engine.start(heartbeat: nil)
        var pairs: [(Int32, Int32)] = []
        do {
            for index in 0..<20 {
                var fds: [Int32] = [0, 0]
                #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
                pairs.append((fds[0], fds[1]))
                let feed = WakingFeed()
                if index == 0 { kept = feed }
                try engine.add(socket: fds[0], framing: .closeDelimited, feed: feed, client: "test", requestID: "r\(index)",
                               path: "/", start: Array("hello\n".utf8))
            }
        }
        // Every stream registered and written to, then the engine stops with all of them open.
        var first = [UInt8](repeating: 0, count: 6)
        #expect(read(pairs[0].1, &first, 6) == 6)
        engine.stop()
        #expect(kept == nil, "a stream ended at stop is still held by the engine")
        for (_, peer) in pairs { close(peer) }
    }
}
