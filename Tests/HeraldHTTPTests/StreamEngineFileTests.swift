import CLinux
import Foundation
import HeraldThreads
@testable import HeraldHTTP
import Testing

/// A feed's file region (a packed replay's `ReplayFile`) goes out by `sendfile` after the bytes taken
/// with it, in parts when the socket fills, and the stream goes on with what the feed queues after it:
/// on HTTP/1.1 the region is one chunk, on HTTP/1.0 its bare bytes.
@Suite struct StreamEngineFileTests {
    /// A file in memory holding `body` then CRLF, as `ReplayFile` writes it.
    final class MemoryFile: @unchecked Sendable {
        let descriptor: Int32
        init(_ body: [UInt8]) throws {
            descriptor = clinux_memfd("test")
            guard descriptor >= 0 else { throw Failure("memfd") }
            let bytes = body + [0x0D, 0x0A]
            guard bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else { throw Failure("write") }
        }
        deinit { close(descriptor) }
    }

    /// Gives `before` and the file on its first take, then `after` once, then nothing.
    final class FileFeed: EventFeed, @unchecked Sendable {
        // Unchecked: the engine's thread alone takes.
        private var steps: [(bytes: [UInt8], file: FileRegion?)]
        init(before: [UInt8], file: FileRegion, after: [UInt8]) { steps = [(before, file), (after, nil)] }

        func take(into out: inout [UInt8], limit: Int) -> FeedPoll { .finished }
        func take(into out: inout [UInt8], limit: Int, file: inout FileRegion?) -> FeedPoll {
            guard !steps.isEmpty else { return .idle }
            let step = steps.removeFirst()
            out += step.bytes
            file = step.file
            return .taken
        }
        func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) {}
        func close() {}
    }

    struct Failure: Error {
        let text: String
        init(_ text: String) { self.text = text }
    }

    @Test(arguments: [StreamFraming.chunked, .closeDelimited])
    func aFileRegionGoesOutWholeInPartsBetweenTheBytesAroundIt(framing: StreamFraming) throws {
        // 400 KB, many times what the small buffers below hold: sendfile writes part, waits for EPOLLOUT.
        let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let file = try MemoryFile(body)
        let (before, after) = (Array("data: before\n\n".utf8), Array("data: after\n\n".utf8))
        // The embedded engine: a pass writes what the socket takes, then the test reads some, and again.
        let engine = StreamEngine(limit: 10)
        let embedded = StreamEngine.Embedded(engine)
        defer { embedded.stop() }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        var small: Int32 = 4096
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var wait = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fds[1], SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let feed = FileFeed(before: before, file: FileRegion(descriptor: file.descriptor, count: body.count, owner: file), after: after)
        try engine.add(socket: fds[0], framing: framing, feed: feed, client: "test", requestID: "r", path: "/", start: Array("head\n".utf8))

        let expected: [UInt8]
        switch framing {
        case .chunked:
            expected = Array("head\n".utf8) + Self.chunk(before) + Self.chunk(body) + Self.chunk(after)
        case .closeDelimited:
            expected = Array("head\n".utf8) + before + body + after
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1000)
        var passes = 0
        // Each pass writes until the socket is full; the reads between empty a part of it: the region
        // goes out in many parts, each after an EPOLLOUT.
        while received.count < expected.count, passes < 10_000 {
            embedded.run()
            passes += 1
            for _ in 0..<20 {
                let got = recv(fds[1], &buffer, buffer.count, Int32(MSG_DONTWAIT))
                guard got > 0 else { break }
                received += buffer[0..<got]
            }
        }
        let same = received == expected
        #expect(same, "\(received.count) bytes of \(expected.count), exact (\(framing))")
        #expect(passes > 20, "the region went out in parts: \(passes) passes")
    }

    static func chunk(_ body: [UInt8]) -> [UInt8] {
        Array(String(body.count, radix: 16).utf8) + [0x0D, 0x0A] + body + [0x0D, 0x0A]
    }
}
