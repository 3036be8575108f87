import Foundation
public import HeraldHTTP
import HeraldJSON

// The access log's lines, formatted by hand into bytes: the same lines, byte for byte, as swift-log's
// handlers wrote (`AccessLog`).
extension AccessLog {
    /// `exchange`'s line at `second` and `milliseconds` past it, as `record` writes it.
    public static func line(_ exchange: Exchange, second: Int, milliseconds: Int, format: Format) -> [UInt8] {
        var bytes: [UInt8] = []
        append(exchange, stamp: stamp(second: second, format: format), milliseconds: milliseconds, format: format, to: &bytes)
        return bytes
    }

    /// `summary`'s `stream closed` line, as `record` writes it.
    public static func line(_ summary: StreamSummary, second: Int, milliseconds: Int, format: Format) -> [UInt8] {
        line(message: "stream closed", fields: fields(summary), second: second, milliseconds: milliseconds, format: format)
    }

    static func line(message: String, fields: [(key: String, value: String)], second: Int, milliseconds: Int, format: Format) -> [UInt8] {
        var bytes: [UInt8] = []
        append(message: message, fields: fields, stamp: stamp(second: second, format: format), milliseconds: milliseconds,
               format: format, to: &bytes)
        return bytes
    }

    static func message(_ exchange: Exchange) -> String { exchange.isStream ? "stream opened" : "request" }

    /// The path as logged: a stream's id (`/streams/{id}/token`, `/streams/{id}`) is what renews it,
    /// so the log holds only a short hash of it (`/streams/#3f9a0c1d/token`), enough to tell requests
    /// about one stream apart.
    static func loggedPath(_ exchange: Exchange) -> String {
        guard exchange.route == renewalRoute || exchange.route == streamRoute else { return exchange.path }
        let id = exchange.path.dropFirst("/streams/".count).prefix { $0 != "/" }
        return "/streams/#" + Fingerprint.hex(id.utf8).prefix(8) + (exchange.route == renewalRoute ? "/token" : "")
    }

    static let renewalRoute = "/streams/{id}/token"
    static let streamRoute = "/streams/{id}"

    /// A request's or stream's fields, sorted by key as both handlers write them (`Telemetry` gives the
    /// logger the same list).
    static func fields(_ exchange: Exchange) -> [(key: String, value: String)] {
        [("http.client", exchange.client), ("http.duration_ms", String(decoding: milliseconds(exchange.duration), as: UTF8.self)),
         ("http.method", exchange.method), ("http.path", loggedPath(exchange)), ("http.request_id", exchange.requestID),
         ("http.route", exchange.route ?? "-"), ("http.status", String(exchange.status))]
    }

    static func fields(_ summary: StreamSummary) -> [(key: String, value: String)] {
        [("http.client", summary.client), ("http.path", summary.path), ("http.request_id", summary.requestID),
         ("stream.duration_ms", String(decoding: milliseconds(summary.duration), as: UTF8.self)),
         ("stream.end", summary.end.rawValue), ("stream.events", String(summary.events))]
    }

    static func append(message: String, fields: [(key: String, value: String)], stamp: [UInt8], milliseconds: Int,
                               format: Format, to bytes: inout [UInt8]) {
        begin(message: message, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes)
        for (key, value) in fields { field(key, value, format: format, to: &bytes) }
        end(message: message, format: format, to: &bytes)
    }

    /// A request's line written straight into `bytes`: the fields of `fields(exchange)`, in their
    /// order, without making them (the list and its strings were a third of a logged GET's line). The
    /// values are looked at first (nearly always nothing to escape: a value is then copied as it is),
    /// then the line is written in one pass into memory on the stack and appended with one copy. A
    /// piece at a time into the array cost 4,400 instructions a line; this costs under 3,000
    /// (`git show dad6eb7:BENCHMARKS.md`, "Kept responses").
    static func append(_ exchange: Exchange, stamp: [UInt8], milliseconds: Int, format: Format, to bytes: inout [UInt8]) {
        let json = format == .json
        let client = LineValue(exchange.client, format: format), method = LineValue(exchange.method, format: format)
        let path = LineValue(loggedPath(exchange), format: format), requestID = LineValue(exchange.requestID, format: format)
        let route = LineValue(exchange.route ?? "-", format: format)
        // The fixed parts, digits included, take under 300 bytes.
        let bound = stamp.count + client.count + method.count + path.count + requestID.count + route.count + 512
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
            guard let start = buffer.baseAddress else { return }
            var line = LineWriter(start)
            let message: StaticString = exchange.isStream ? "stream opened" : "request"
            if json {
                line.put(#"{"time":""#)
                line.put(stamp)
                line.putDigits(milliseconds, width: 3)
                line.put(#"Z","level":"info","message":""#)
                line.put(message)
                line.put(#"","logger":"herald","http.client":""#)
            } else {
                line.put(stamp)
                line.put(" info herald: http.client=")
            }
            line.put(client)
            line.put(json ? #"","http.duration_ms":""# : " http.duration_ms=")
            line.putMilliseconds(exchange.duration)
            line.put(json ? #"","http.method":""# : " http.method=")
            line.put(method)
            line.put(json ? #"","http.path":""# : " http.path=")
            line.put(path)
            line.put(json ? #"","http.request_id":""# : " http.request_id=")
            line.put(requestID)
            line.put(json ? #"","http.route":""# : " http.route=")
            line.put(route)
            line.put(json ? #"","http.status":""# : " http.status=")
            line.putDigits(exchange.status)
            if json {
                line.put("\"}\n")
            } else {
                line.put(" [HeraldServer] ")
                line.put(message)
                line.put("\n")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(start: start, count: line.cursor - start))
        }
    }

    /// A value of a request's line as the format writes it, without JSON's quotes: the string itself
    /// when nothing in it needs escaping (`isPlain`), its escaped bytes otherwise.
    enum LineValue {
        case plain(String)
        case escaped([UInt8])

        init(_ value: String, format: Format) {
            if value.utf8AllSatisfy({ isPlain($0, format: format) }) {
                self = .plain(value)
                return
            }
            var out: [UInt8] = []
            switch format {
            case .text: text(value, into: &out)
            case .json:
                json(value, into: &out)
                out = Array(out.dropFirst().dropLast())
            }
            self = .escaped(out)
        }

        var count: Int {
            switch self {
            case .plain(let value): value.utf8.count
            case .escaped(let bytes): bytes.count
            }
        }
    }

    /// Whether `byte` is written as it is in a value of `format` (`text` and `json` escape the rest).
    static func isPlain(_ byte: UInt8, format: Format) -> Bool {
        byte >= 0x20 && byte < 0x7F && byte != 0x5C && (format == .text || byte != 0x22)
    }

    /// A cursor writing into memory its caller has reserved.
    struct LineWriter {
        var cursor: UnsafeMutablePointer<UInt8>

        init(_ start: UnsafeMutablePointer<UInt8>) { cursor = start }

        mutating func put(_ text: StaticString) {
            cursor.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
            cursor += text.utf8CodeUnitCount
        }

        mutating func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return }
                cursor.update(from: base, count: bytes.count)
                cursor += bytes.count
            }
        }

        mutating func put(_ value: LineValue) {
            switch value {
            case .plain(var text):
                text.withUTF8 { bytes in
                    guard let base = bytes.baseAddress else { return }
                    cursor.update(from: base, count: bytes.count)
                    cursor += bytes.count
                }
            case .escaped(let bytes): put(bytes)
            }
        }

        /// A number's decimal digits, at least `width` of them.
        mutating func putDigits(_ number: Int, width: Int = 1) {
            var digits = 1, rest = max(number, 0)
            while rest >= 10 { rest /= 10; digits += 1 }
            digits = max(digits, width)
            rest = max(number, 0)
            for place in stride(from: digits - 1, through: 0, by: -1) {
                cursor[place] = UInt8(0x30 + rest % 10)
                rest /= 10
            }
            cursor += digits
        }

        /// Milliseconds with up to three decimals, as a Double of them prints (`1.544`, `12.0`), from
        /// whole microseconds.
        mutating func putMilliseconds(_ duration: Duration) {
            let (seconds, attoseconds) = duration.components
            let microseconds = Int(max(seconds * 1_000_000 + attoseconds / 1_000_000_000_000, 0))
            putDigits(microseconds / 1000)
            cursor.pointee = 0x2E
            cursor += 1
            let fraction = microseconds % 1000
            putDigits(fraction / 100)
            if fraction % 100 != 0 { putDigits(fraction / 10 % 10) }
            if fraction % 10 != 0 { putDigits(fraction % 10) }
        }
    }

    static func begin(message: String, stamp: [UInt8], milliseconds: Int, format: Format, to bytes: inout [UInt8]) {
        switch format {
        case .text:
            bytes += stamp
            bytes.append(contentsOf: " info herald:".utf8)
        case .json:
            bytes.append(contentsOf: #"{"time":""#.utf8)
            bytes += stamp
            bytes += [0x30 + UInt8(milliseconds / 100), 0x30 + UInt8(milliseconds / 10 % 10), 0x30 + UInt8(milliseconds % 10)]
            bytes.append(contentsOf: #"Z","level":"info","message":"#.utf8)
            Self.json(message, into: &bytes)
            bytes.append(contentsOf: #","logger":"herald""#.utf8)
        }
    }

    static func field(_ key: String, _ value: String, format: Format, to bytes: inout [UInt8]) {
        switch format {
        case .text:
            bytes.append(0x20)
            bytes.appendUTF8(key)
            bytes.append(0x3D)
            Self.text(value, into: &bytes)
        case .json:
            bytes.append(0x2C)
            Self.json(key, into: &bytes)
            bytes.append(0x3A)
            Self.json(value, into: &bytes)
        }
    }

    static func end(message: String, format: Format, to bytes: inout [UInt8]) {
        switch format {
        case .text:
            bytes.append(contentsOf: " [HeraldServer] ".utf8)
            bytes.appendUTF8(message)
            bytes.append(0x0A)
        case .json:
            bytes.append(contentsOf: "}\n".utf8)
        }
    }

    /// The timestamp of `second`: text, local time as swift-log's `StreamLogHandler` writes it
    /// (`%Y-%m-%dT%H:%M:%S%z`); JSON, UTC up to the milliseconds' dot (`2026-11-26T01:06:39.`).
    static func stamp(second: Int, format: Format) -> [UInt8] {
        var time = time_t(second)
        var parts = tm()
        var buffer = [Int8](repeating: 0, count: 64)
        switch format {
        case .text:
            localtime_r(&time, &parts)
            let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
            return buffer[..<count].map { UInt8(bitPattern: $0) }
        case .json:
            gmtime_r(&time, &parts)
            let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S.", &parts)
            return buffer[..<count].map { UInt8(bitPattern: $0) }
        }
    }

    /// Milliseconds with up to three decimals, as a Double of them prints (`1.544`, `12.0`), from whole
    /// microseconds.
    static func milliseconds(_ duration: Duration) -> [UInt8] {
        var out: [UInt8] = []
        appendMilliseconds(duration, to: &out)
        return out
    }

    static func appendMilliseconds(_ duration: Duration, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            guard let start = buffer.baseAddress else { return }
            var digits = LineWriter(start)
            digits.putMilliseconds(duration)
            out.append(contentsOf: UnsafeBufferPointer(start: start, count: digits.cursor - start))
        }
    }

    /// `value` as the text format writes a metadata value: controls and `\` escaped.
    static func text(_ value: String, into out: inout [UInt8]) {
        if !out.appendUTF8(value, ifAll: { isPlain($0, format: .text) }) {
            out.appendUTF8(EscapingLogHandler.escaped(value))
        }
    }

    /// `value` as a JSON string, quotes included.
    static func json(_ value: String, into out: inout [UInt8]) {
        out.append(0x22)
        if out.appendUTF8(value, ifAll: { isPlain($0, format: .json) }) {
            out.append(0x22)
        } else {
            out.removeLast()
            out += JSONValue.string(value).bytes
        }
    }
}
