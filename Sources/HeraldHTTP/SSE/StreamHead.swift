import Glibc
import HeraldJSON
import HTTPTypes
import HeraldThreads

/// The response head of an SSE stream or a held answer, which the stream engine writes itself.
enum StreamHead {
    /// `HTTP/1.1 200 OK`, a `Date`, the route's headers, then the framing: `Transfer-Encoding: chunked`
    /// on HTTP/1.1, `Connection: close` on HTTP/1.0 (the body ends when the connection does).
    static func bytes(headers: HTTPFields, framing: StreamFraming, now: time_t = time(nil)) -> [UInt8] {
        bytes(status: .ok, headers: headers, framing: framing == .chunked ? "Transfer-Encoding: chunked" : "Connection: close", now: now)
    }

    /// The status line, a `Date`, `headers`, then `framing` (the fields that say where the body ends)
    /// and the blank line. Written as bytes, with the date made once a second: every stream's arrival
    /// makes one.
    static func bytes(status: HTTPResponse.Status, headers: HTTPFields, framing: String, now: time_t = time(nil)) -> [UInt8] {
        var head: [UInt8] = []
        head.reserveCapacity(512)
        head.append(contentsOf: "HTTP/1.1 ".utf8)
        head.append(contentsOf: String(status.code).utf8)
        head.append(0x20)
        head.append(contentsOf: status.reasonPhrase.utf8)
        head.append(contentsOf: "\r\nDate: ".utf8)
        head.append(contentsOf: date(now))
        head.append(contentsOf: "\r\n".utf8)
        for field in headers {
            head.appendUTF8(field.name.rawName)
            head.append(contentsOf: ": ".utf8)
            head.appendUTF8(field.value)
            head.append(contentsOf: "\r\n".utf8)
        }
        head.append(contentsOf: framing.utf8)
        head.append(contentsOf: "\r\n\r\n".utf8)
        return head
    }

    /// The last second's `Date` value, as bytes. A `Lock`, not Synchronization's `Mutex`, which
    /// ThreadSanitizer cannot see (it reported a race here under the same `Mutex`).
    private static let lastDate = Lock<(seconds: time_t, bytes: [UInt8])>((-1, []))

    private static func date(_ seconds: time_t) -> [UInt8] {
        lastDate.withLock { last in
            if last.seconds != seconds { last = (seconds, Array(httpDate(seconds).utf8)) }
            return last.bytes
        }
    }

    /// An IMF-fixdate (RFC 9110, 5.6.7), such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ seconds: time_t) -> String {
        var time = seconds
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday) % 7]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon) % 12]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

/// The answer to a HEAD of a stream: the head a GET would get, framing included (RFC 9110, 9.3.2), and
/// no body; then the connection closes. The engine writes it, since libmicrohttpd would end a chunked
/// HEAD with a last chunk, and with `Content-Length: 0` a proxy passes on a length the GET does not have.
final class HeadOnlyFeed: EventFeed, @unchecked Sendable {
    // Unchecked: made on the server's thread, then used only by the engine's.
    private var head: [UInt8]?

    init(headers: HTTPFields, framing: StreamFraming) {
        let fields = framing == .chunked ? "Transfer-Encoding: chunked\r\nConnection: close" : "Connection: close"
        head = StreamHead.bytes(status: .ok, headers: headers, framing: fields)
    }

    func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
        guard let head else { return .finished }
        out.append(contentsOf: head)
        self.head = nil
        return .complete
    }

    func last(into out: inout [UInt8]) {
        if let head { out.append(contentsOf: head) }
        head = nil
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) {}
    func close() {}
    var heartbeats: Bool { false }
}
