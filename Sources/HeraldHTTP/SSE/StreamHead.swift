import Glibc
import HTTPTypes

/// The response head of an SSE stream or a held answer, which the stream engine writes itself.
enum StreamHead {
    /// `HTTP/1.1 200 OK`, a `Date`, the route's headers, then the framing: `Transfer-Encoding: chunked`
    /// on HTTP/1.1, `Connection: close` on HTTP/1.0 (the body ends when the connection does).
    static func bytes(headers: HTTPFields, framing: StreamFraming, now: time_t = time(nil)) -> [UInt8] {
        bytes(status: .ok, headers: headers, framing: framing == .chunked ? "Transfer-Encoding: chunked" : "Connection: close", now: now)
    }

    /// The status line, a `Date`, `headers`, then `framing` (the fields that say where the body ends)
    /// and the blank line.
    static func bytes(status: HTTPResponse.Status, headers: HTTPFields, framing: String, now: time_t = time(nil)) -> [UInt8] {
        var head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nDate: \(httpDate(now))\r\n"
        for field in headers {
            head += "\(field.name.rawName): \(field.value)\r\n"
        }
        head += framing + "\r\n\r\n"
        return Array(head.utf8)
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
