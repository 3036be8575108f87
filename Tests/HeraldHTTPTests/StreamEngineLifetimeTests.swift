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
    /// and which, when it is closed, looks whether the stream's last chunk has reached the peer.
    final class PeekingFeed: EventFeed, @unchecked Sendable {
        // Unchecked: set before the stream is added, then the engine's thread alone.
        let completes: Bool
        var peer: Int32 = -1
        private(set) var closedBeforeTheEnd: Bool?
        init(completes: Bool) { self.completes = completes }
        func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
            guard completes else { return .idle }
            out += Array("data: last\n\n".utf8)
            return .complete
        }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) {}
        func last(into out: inout [UInt8]) { out += Array("event: bye\ndata: {}\n\n".utf8) }
        func close() {
            var waiting = [UInt8](repeating: 0, count: 4096)
            let count = recv(peer, &waiting, waiting.count, Int32(MSG_PEEK | MSG_DONTWAIT))
            closedBeforeTheEnd = !(count > 0 && waiting[..<count].elementsEqual(Array("head\n".utf8) + Self.ending(completes)))
        }
        /// What the stream ends with after its head (chunked): the feed's last bytes, then the last chunk.
        static func ending(_ completes: Bool) -> [UInt8] {
            let body = Array((completes ? "data: last\n\n" : "event: bye\ndata: {}\n\n").utf8)
            return Array(String(body.count, radix: 16).utf8) + [0x0D, 0x0A] + body + [0x0D, 0x0A] + Array("0\r\n\r\n".utf8)
        }
    }

    /// A client that reads its stream's end (the last chunk) may at once renew or resume it, and must
    /// find it gone: the feed (which holds the renewal lease and the subscription) is closed before
    /// the stream's last bytes are written, not after. On the embedded engine the feed looks, when it
    /// is closed, whether the end is out already: no timing decides it. (Closed after the write, a
    /// client read the end 0.3 s before the feed was closed.)
    @Test func aStreamThatEndsCleanlyClosesItsFeedBeforeItsLastBytes() throws {
        for completes in [true, false] {
            let engine = StreamEngine(limit: 10)
            let embedded = StreamEngine.Embedded(engine)
            defer { embedded.stop() }
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[1]) }
            let feed = PeekingFeed(completes: completes)
            feed.peer = fds[1]
            try engine.add(socket: fds[0], framing: .chunked, feed: feed, client: "test", requestID: "r", path: "/", start: Array("head\n".utf8))
            embedded.runUntilIdle()
            if !completes {
                engine.closeAll(.graceful)
                embedded.runUntilIdle()
            }
            #expect(feed.closedBeforeTheEnd == true, "the feed was closed before the end was written (completes: \(completes))")
            var received = [UInt8](repeating: 0, count: 4096)
            let count = recv(fds[1], &received, received.count, Int32(MSG_DONTWAIT))
            #expect(count > 0 && received[..<count].elementsEqual(Array("head\n".utf8) + PeekingFeed.ending(completes)), "the end came")
        }
    }

    /// On the embedded engine: every stream registered and written to, then the engine stops with all
    /// of them open, and lets go of each.
    @Test func streamsEndedAtStopAreLetGo() throws {
        weak var kept: WakingFeed?
        let engine = StreamEngine(limit: 100)
        let embedded = StreamEngine.Embedded(engine)
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
        embedded.runUntilIdle()
        #expect(embedded.streamCount == 20)
        var first = [UInt8](repeating: 0, count: 6)
        #expect(recv(pairs[0].1, &first, 6, Int32(MSG_DONTWAIT)) == 6)
        embedded.stop()
        #expect(kept == nil, "a stream ended at stop is still held by the engine")
        for (_, peer) in pairs { close(peer) }
    }
}
