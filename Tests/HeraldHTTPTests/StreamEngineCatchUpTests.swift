import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Testing

/// Events published while a loop writes its streams (a fan-out to many that takes longer than the time
/// between events) reach the streams it has not written yet in the same pass, in the same write as the
/// events they were woken for: an event then waits for at most one pass, not for the rest of one and
/// then a whole one of its own.
@Suite struct StreamEngineCatchUpTests {
    /// A feed that queues what it is given and wakes its stream when it was idle, as a hub observer does;
    /// `onTake` runs (once) on its next take, on the engine's thread.
    final class QueueFeed: EventFeed, @unchecked Sendable {
        // Unchecked: every field is under the lock.
        private struct State {
            var queue: [UInt8] = []
            var waiting = false
            var waker: (@Sendable (Bool) -> Void)?
            var onTake: (@Sendable () -> Void)?
        }
        private let state = Lock(State())

        var isIdle: Bool { state.withLock { $0.waiting } }
        func onNextTake(_ action: @escaping @Sendable () -> Void) { state.withLock { $0.onTake = action } }

        func push(_ bytes: [UInt8]) {
            let waker = state.withLock { state -> (@Sendable (Bool) -> Void)? in
                state.queue += bytes
                guard state.waiting else { return nil }
                state.waiting = false
                return state.waker
            }
            waker?(false)
        }

        func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
            if let action = state.withLock({ state in defer { state.onTake = nil }; return state.onTake }) { action() }
            return state.withLock { state in
                guard !state.queue.isEmpty else {
                    state.waiting = true
                    return .idle
                }
                out += state.queue
                state.queue = []
                return .taken
            }
        }

        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) { state.withLock { $0.waker = waker } }
        func close() { state.withLock { $0.waker = nil } }
    }

    /// On the embedded engine (one loop, a pass at a time on this thread): the pass that writes the
    /// first event looks for new events every `lookEvery` streams, so every stream after the first
    /// look gets both events in one write, and those before get the second in the next pass.
    @Test func anEventPublishedDuringAPassGoesOutWithTheEventsOfTheStreamsNotWrittenYet() throws {
        let count = 200
        let engine = StreamEngine(limit: count + 10)
        let feeds = (0..<count).map { _ in QueueFeed() }
        let published = Lock<[[UInt8]]>([])
        // The fan-out queues each published event to every feed, in order: the streams are woken, and
        // written in the pass, in that order.
        let fanOut = { @Sendable (_: Int) -> StreamEngine.FanOutWork? in
            let events = published.withLock { events in defer { events = [] }; return events }
            guard !events.isEmpty else { return nil }
            return StreamEngine.FanOutWork { _, _, _ in
                for event in events { for feed in feeds { feed.push(event) } }
            }
        }
        let embedded = StreamEngine.Embedded(engine, duties: StreamEngine.Duties(fanOut: fanOut))
        defer { embedded.stop() }
        var peers: [Int32] = []
        defer { for peer in peers { close(peer) } }
        for (index, feed) in feeds.enumerated() {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            peers.append(fds[1])
            var wait = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fds[1], SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            try engine.add(socket: fds[0], framing: .chunked, feed: feed, client: "test", requestID: "r\(index)", path: "/", start: [])
        }
        embedded.runUntilIdle()
        #expect(feeds.allSatisfy { $0.isIdle }, "every stream registered and waiting")

        let (first, second) = (Array("data: 1\n\n".utf8), Array("data: 2\n\n".utf8))
        // The second event is published while the pass that writes the first is under way: as the
        // first stream written takes it.
        feeds[0].onNextTake {
            published.withLock { $0.append(second) }
            engine.signal()
        }
        published.withLock { $0.append(first) }
        engine.signal()
        embedded.runUntilIdle()

        var together = 0
        for (index, peer) in peers.enumerated() {
            let chunks = try Self.chunks(from: peer, until: first.count + second.count)
            #expect(chunks.joined().elementsEqual(first + second), "stream \(index) got both events, in order, once")
            if chunks.first?.elementsEqual(first + second) == true { together += 1 }
        }
        #expect(together == count - StreamEngine.lookEvery,
                "\(together) of \(count) streams had the second event in the write of the first")
    }

    /// The bodies of the chunks read from `socket` until they hold `bytes` bytes in all.
    private static func chunks(from socket: Int32, until bytes: Int) throws -> [[UInt8]] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var chunks: [[UInt8]] = []
        var position = 0
        while chunks.reduce(0, { $0 + $1.count }) < bytes {
            // Parse what is complete: a hexadecimal size, CRLF, the body, CRLF.
            if let lineEnd = received[position...].firstIndex(of: 0x0D), lineEnd + 1 < received.count,
               let size = Int(String(decoding: received[position..<lineEnd], as: UTF8.self), radix: 16),
               received.count >= lineEnd + 2 + size + 2 {
                chunks.append(Array(received[(lineEnd + 2)..<(lineEnd + 2 + size)]))
                position = lineEnd + 2 + size + 2
                continue
            }
            let got = read(socket, &buffer, buffer.count)
            guard got > 0 else { throw Timeout() }
            received += buffer[0..<got]
        }
        return chunks
    }

    struct Timeout: Error {}
}
