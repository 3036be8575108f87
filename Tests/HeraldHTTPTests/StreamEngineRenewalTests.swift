import CLinux
import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Synchronization
import Testing

/// A renewal moves a stream's end and then wakes its loop, which files the new end. Between the two,
/// the loop's once-a-second tick may come first: it must read the end the renewal moved, not end the
/// stream at the one it had filed (CI once saw a stream renewed with 204 end at its first token's `exp`).
@Suite struct StreamEngineRenewalTests {
    /// A clock the test moves.
    final class SteppedClock: StreamClock {
        let start = Date()
        private let offset = Mutex<Double>(0)
        func advance(by seconds: Double) { offset.withLock { $0 += seconds } }
        var elapsed: Duration { .seconds(1_000 + offset.withLock { $0 }) }
        var date: Date { start.addingTimeInterval(offset.withLock { $0 }) }
        var reading: (elapsed: Duration, date: Date) {
            offset.withLock { offset in (.seconds(1_000 + offset), start.addingTimeInterval(offset)) }
        }
    }

    /// A renewable feed whose end the test moves without waking the stream: a renewal whose wake-up
    /// the loop has not taken yet.
    final class RenewableFeed: EventFeed {
        private let end: Mutex<Date>
        init(expires: Date) { end = Mutex(expires) }
        func move(to date: Date) { end.withLock { $0 = date } }
        var expires: Date? { end.withLock { $0 } }
        var renewable: Bool { true }
        func take(into out: inout [UInt8], limit: Int) -> FeedPoll { .idle }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) {}
        func close() {}
        func last(into out: inout [UInt8]) { out += Array("event: expired\ndata: {}\n\n".utf8) }
    }

    /// What the peer reads within `seconds`: the bytes, and whether the stream ended.
    func read(_ socket: Int32, for seconds: Int) -> (text: String, ended: Bool) {
        var wait = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(socket, &chunk, chunk.count)
            if count > 0 { received += chunk[0..<count]; continue }
            return (String(decoding: received, as: UTF8.self), count == 0)
        }
    }

    @Test func aTickBeforeTheRenewalsWakeUpEndsTheStreamAtItsNewEnd() throws {
        let clock = SteppedClock()
        let engine = StreamEngine(limit: 10, clock: clock, expiryWarning: .seconds(5))
        engine.start(heartbeat: nil)
        defer { engine.stop() }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        let feed = RenewableFeed(expires: clock.date.addingTimeInterval(10))
        try engine.add(socket: fds[0], framing: .closeDelimited, feed: feed, client: "test", requestID: "r", path: "/",
                       start: Array("hello\n".utf8))
        #expect(read(fds[1], for: 1).text == "hello\n")
        feed.move(to: clock.date.addingTimeInterval(100))
        clock.advance(by: 20)  // past the first end; the loop ticks within a second
        let renewed = read(fds[1], for: 3)
        #expect(!renewed.ended && renewed.text.isEmpty, "20 s in, a stream renewed to 100 s ended: \(renewed.text)")
        clock.advance(by: 81)  // past the new end
        let expired = read(fds[1], for: 5)
        #expect(expired.ended && expired.text == "event: expired\ndata: {}\n\n", "\(expired.text)")
    }
}
