import Foundation
import HeraldThreads
@testable import HeraldHTTP
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
