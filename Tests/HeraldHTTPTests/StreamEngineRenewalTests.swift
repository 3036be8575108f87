import CLinux
import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Synchronization
import Testing

/// A stream's end, renewal and warning, on the embedded engine (`StreamEngine.Embedded`): one loop
/// run a pass at a time on the test's thread, with a clock the test moves. What each test sees is
/// what a pass's order gives, never what two threads' timing happened to give.
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

    /// A renewable feed whose end the test moves, with or without waking the stream (a renewal, or
    /// one whose wake-up the loop has not taken yet), and which warns once before the end.
    final class RenewableFeed: EventFeed {
        private let end: Mutex<Date>
        private let waker = Mutex<(@Sendable (Bool) -> Void)?>(nil)
        private let warning = Mutex<Bool>(false)
        init(expires: Date) { end = Mutex(expires) }
        func move(to date: Date, waking: Bool) {
            end.withLock { $0 = date }
            if waking { waker.withLock { $0 }?(false) }
        }
        var expires: Date? { end.withLock { $0 } }
        var renewable: Bool { true }
        func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
            guard warning.withLock({ warned in defer { warned = false }; return warned }) else { return .idle }
            out += Array("event: token-expiring\ndata: {}\n\n".utf8)
            return .taken
        }
        func warnExpiring() -> Bool {
            warning.withLock { $0 = true }
            return true
        }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) { self.waker.withLock { $0 = waker } }
        func close() { waker.withLock { $0 = nil } }
        func last(into out: inout [UInt8]) { out += Array("event: expired\ndata: {}\n\n".utf8) }
    }

    /// A stream on the embedded engine, and its peer.
    struct Fixture {
        let clock = SteppedClock()
        let engine: StreamEngine
        let embedded: StreamEngine.Embedded
        let feed: RenewableFeed
        let peer: Int32

        init(endingIn seconds: Double) throws {
            engine = StreamEngine(limit: 10, clock: clock, expiryWarning: .seconds(5))
            embedded = StreamEngine.Embedded(engine)
            feed = RenewableFeed(expires: clock.date.addingTimeInterval(seconds))
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            peer = fds[1]
            try engine.add(socket: fds[0], framing: .closeDelimited, feed: feed, client: "test", requestID: "r", path: "/",
                           start: Array("hello\n".utf8))
        }

        /// What the peer can read now, and whether the stream has ended (the socket closed).
        func received() -> (text: String, ended: Bool) {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(peer, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if count > 0 { bytes += chunk[0..<count]; continue }
                return (String(decoding: bytes, as: UTF8.self), count == 0)
            }
        }

        /// Moves the clock, then runs the passes that follow.
        func advance(by seconds: Double) {
            clock.advance(by: seconds)
            embedded.runUntilIdle()
        }

        func close() {
            embedded.stop()
            Glibc.close(peer)
        }
    }

    @Test func aStreamIsWarnedThenEndsAtItsEnd() throws {
        let fixture = try Fixture(endingIn: 10)
        defer { fixture.close() }
        fixture.embedded.runUntilIdle()
        #expect(fixture.received().text == "hello\n")
        fixture.advance(by: 3)
        #expect(fixture.received() == ("", false), "3 s in: nothing yet")
        fixture.advance(by: 3)
        #expect(fixture.received() == ("event: token-expiring\ndata: {}\n\n", false), "within 5 s of the end: warned")
        fixture.advance(by: 5)
        #expect(fixture.received() == ("event: expired\ndata: {}\n\n", true), "past the end: the last event, then the end")
        #expect(fixture.embedded.streamCount == 0)
    }

    /// A renewal moves the end and wakes the stream: the end is filed again, the stream goes on
    /// past the old end, is warned again before the new one and ends there.
    @Test func aRenewedStreamGoesOnToItsNewEnd() throws {
        let fixture = try Fixture(endingIn: 10)
        defer { fixture.close() }
        fixture.embedded.runUntilIdle()
        fixture.feed.move(to: fixture.clock.date.addingTimeInterval(30), waking: true)
        fixture.embedded.runUntilIdle()
        fixture.advance(by: 12)
        #expect(fixture.received() == ("hello\n", false), "12 s in, renewed to 30: open, and not warned")
        fixture.advance(by: 14)
        #expect(fixture.received() == ("event: token-expiring\ndata: {}\n\n", false))
        fixture.advance(by: 5)
        #expect(fixture.received() == ("event: expired\ndata: {}\n\n", true))
    }

    /// The loop's once-a-second tick may come before the renewal's wake-up: it must read the end the
    /// renewal moved, not end the stream at the one it had filed (CI once saw a stream renewed with
    /// 204 end at its first token's `exp`).
    @Test func aTickBeforeTheRenewalsWakeUpEndsTheStreamAtItsNewEnd() throws {
        let fixture = try Fixture(endingIn: 10)
        defer { fixture.close() }
        fixture.embedded.runUntilIdle()
        #expect(fixture.received().text == "hello\n")
        fixture.feed.move(to: fixture.clock.date.addingTimeInterval(100), waking: false)
        fixture.advance(by: 20)  // past the first end, with no wake-up taken
        let renewed = fixture.received()
        #expect(!renewed.ended && !renewed.text.contains("expired"), "20 s in, a stream renewed to 100 s ended: \(renewed.text)")
        fixture.advance(by: 81)  // past the new end
        #expect(fixture.received().ended)
    }
}
