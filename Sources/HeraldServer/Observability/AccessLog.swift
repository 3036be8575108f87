import Foundation
public import HeraldHTTP
import HeraldJSON
import HeraldThreads
import Logging

/// The access log: a line per answered request, and the lines of streams opening and closing, formatted by hand into bytes (no metadata dictionary,
/// no string interpolation, the timestamp made once a second) and written in batches by a thread of
/// its own, off the request threads. A line is written within `delay` (200 ms) of its request; `flush`
/// writes what is pending at once, and `Herald.stop()` calls it, so nothing is lost at SIGTERM.
///
/// The lines are the ones swift-log's handlers wrote before, byte for byte, in both formats:
/// - text: `2026-11-26T01:06:37+0000 info herald: http.client=… … [HeraldServer] request`, with
///   controls escaped as `EscapingLogHandler` does;
/// - JSON: `{"time":"…Z","level":"info","message":"request","logger":"herald","http.client":"…",…}`.
///
/// Lines go to standard error with the other log lines, which are written as they happen: an access
/// line may come up to `delay` after a line logged later.
public final class AccessLog: Sendable {
    public enum Format: Sendable { case text, json }

    private struct Pending {
        var bytes: [UInt8] = []
        /// The second the cached timestamp is of, and its text (to the second; JSON adds milliseconds).
        var second = -1
        var stamp: [UInt8] = []
    }

    private let format: Format
    private let output: JSONLogHandler.Output
    private let pending = Lock(Pending())
    /// Signalled by the line that finds nothing pending: the writer waits `delay`, then writes.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the line that takes the pending bytes past `highWater`: the writer stops waiting.
    private let full = DispatchSemaphore(value: 0)
    private let delay: Duration
    private let highWater = 256 * 1024

    public init(format: Format, output: JSONLogHandler.Output = .standardError, delay: Duration = .milliseconds(200)) {
        self.format = format
        self.output = output
        self.delay = delay
        let thread = Thread { [self] in
            while true {
                wake.wait()
                _ = full.wait(timeout: .now() + delay.inSeconds)
                flush()
            }
        }
        thread.name = "herald-access-log"
        thread.start()
    }

    /// Writes what is pending now, on the caller's thread.
    public func flush() {
        let bytes = pending.withLock { pending -> [UInt8] in
            defer { pending.bytes = [] }
            return pending.bytes
        }
        if !bytes.isEmpty { output.write(bytes) }
    }

    /// Adds `exchange`'s line: `request`, or `stream opened` for a stream.
    public func record(_ exchange: Exchange) {
        add { stamp, milliseconds, format, bytes in Self.append(exchange, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes) }
    }

    /// Adds a `stream closed` line.
    public func record(_ summary: StreamSummary) {
        add(message: "stream closed", fields: Self.fields(summary))
    }

    private func add(message: String, fields: [(key: String, value: String)]) {
        add { stamp, milliseconds, format, bytes in
            Self.append(message: message, fields: fields, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes)
        }
    }

    private func add(_ write: ([UInt8], Int, Format, inout [UInt8]) -> Void) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let (wasEmpty, filled) = pending.withLock { pending -> (Bool, Bool) in
            let before = pending.bytes.count
            if pending.second != now.tv_sec {
                pending.second = now.tv_sec
                pending.stamp = Self.stamp(second: now.tv_sec, format: format)
            }
            write(pending.stamp, Int(now.tv_nsec / 1_000_000), format, &pending.bytes)
            return (before == 0, before < highWater && pending.bytes.count >= highWater)
        }
        if wasEmpty { wake.signal() }
        if filled { full.signal() }
    }

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

    private static func line(message: String, fields: [(key: String, value: String)], second: Int, milliseconds: Int, format: Format) -> [UInt8] {
        var bytes: [UInt8] = []
        append(message: message, fields: fields, stamp: stamp(second: second, format: format), milliseconds: milliseconds,
               format: format, to: &bytes)
        return bytes
    }

    static func message(_ exchange: Exchange) -> String { exchange.isStream ? "stream opened" : "request" }

    /// A request's or stream's fields, sorted by key as both handlers write them (`Telemetry` gives the
    /// logger the same list).
    static func fields(_ exchange: Exchange) -> [(key: String, value: String)] {
        [("http.client", exchange.client), ("http.duration_ms", String(decoding: milliseconds(exchange.duration), as: UTF8.self)),
         ("http.method", exchange.method), ("http.path", exchange.path), ("http.request_id", exchange.requestID),
         ("http.route", exchange.route ?? "-"), ("http.status", String(exchange.status))]
    }

    static func fields(_ summary: StreamSummary) -> [(key: String, value: String)] {
        [("http.client", summary.client), ("http.path", summary.path), ("http.request_id", summary.requestID),
         ("stream.duration_ms", String(decoding: milliseconds(summary.duration), as: UTF8.self)),
         ("stream.end", summary.end.rawValue), ("stream.events", String(summary.events))]
    }

    private static func append(message: String, fields: [(key: String, value: String)], stamp: [UInt8], milliseconds: Int,
                               format: Format, to bytes: inout [UInt8]) {
        begin(message: message, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes)
        for (key, value) in fields { field(key, value, format: format, to: &bytes) }
        end(message: message, format: format, to: &bytes)
    }

    /// A request's line written straight into `bytes`: the fields of `fields(exchange)`, in their
    /// order, without making them (the list and its strings were a third of a logged GET's line).
    private static func append(_ exchange: Exchange, stamp: [UInt8], milliseconds: Int, format: Format, to bytes: inout [UInt8]) {
        if appendPlain(exchange, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes) { return }
        let message = message(exchange)
        begin(message: message, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes)
        field("http.client", exchange.client, format: format, to: &bytes)
        // Digits and a dot: nothing to escape in either format.
        bytes.append(contentsOf: format == .text ? " http.duration_ms=".utf8 : #","http.duration_ms":""#.utf8)
        appendMilliseconds(exchange.duration, to: &bytes)
        if format == .json { bytes.append(0x22) }
        field("http.method", exchange.method, format: format, to: &bytes)
        field("http.path", exchange.path, format: format, to: &bytes)
        field("http.request_id", exchange.requestID, format: format, to: &bytes)
        field("http.route", exchange.route ?? "-", format: format, to: &bytes)
        bytes.append(contentsOf: format == .text ? " http.status=".utf8 : #","http.status":""#.utf8)
        bytes.appendUTF8(String(exchange.status))
        if format == .json { bytes.append(0x22) }
        end(message: message, format: format, to: &bytes)
    }

    /// The line of `append(_:stamp:milliseconds:format:to:)` when no value needs escaping (nearly
    /// always), written in one pass into memory on the stack and appended with one copy. A piece at a
    /// time into the array cost 4,400 instructions a line; this costs 2,600 (BENCHMARKS.md, "Kept
    /// responses"). False, and nothing appended, when a value needs escaping.
    static func appendPlain(_ exchange: Exchange, stamp: [UInt8], milliseconds: Int, format: Format, to bytes: inout [UInt8]) -> Bool {
        let route = exchange.route ?? "-"
        let bound = stamp.count + exchange.client.utf8.count + exchange.method.utf8.count + exchange.path.utf8.count
            + exchange.requestID.utf8.count + route.utf8.count + 512
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer -> Bool in
            guard let start = buffer.baseAddress else { return false }
            var line = LineWriter(start)
            let json = format == .json
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
            guard line.putPlain(exchange.client, json: json) else { return false }
            line.put(json ? #"","http.duration_ms":""# : " http.duration_ms=")
            line.putMilliseconds(exchange.duration)
            line.put(json ? #"","http.method":""# : " http.method=")
            guard line.putPlain(exchange.method, json: json) else { return false }
            line.put(json ? #"","http.path":""# : " http.path=")
            guard line.putPlain(exchange.path, json: json) else { return false }
            line.put(json ? #"","http.request_id":""# : " http.request_id=")
            guard line.putPlain(exchange.requestID, json: json) else { return false }
            line.put(json ? #"","http.route":""# : " http.route=")
            guard line.putPlain(route, json: json) else { return false }
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
            return true
        }
    }

    /// A cursor writing into memory its caller has reserved.
    private struct LineWriter {
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

        /// `value`'s bytes, if none needs escaping in the format (what `text` and `json` write
        /// unchanged); false otherwise.
        mutating func putPlain(_ value: String, json: Bool) -> Bool {
            var value = value
            return value.withUTF8 { bytes in
                for byte in bytes {
                    guard byte >= 0x20, byte < 0x7F, byte != 0x5C, !(json && byte == 0x22) else { return false }
                    cursor.pointee = byte
                    cursor += 1
                }
                return true
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

        /// As `appendMilliseconds` writes it.
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

    private static func begin(message: String, stamp: [UInt8], milliseconds: Int, format: Format, to bytes: inout [UInt8]) {
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

    private static func field(_ key: String, _ value: String, format: Format, to bytes: inout [UInt8]) {
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

    private static func end(message: String, format: Format, to bytes: inout [UInt8]) {
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
        let (seconds, attoseconds) = duration.components
        let microseconds = max(seconds * 1_000_000 + attoseconds / 1_000_000_000_000, 0)
        out.appendUTF8(String(microseconds / 1000))
        out.append(0x2E)
        let fraction = Int(microseconds % 1000)
        out.append(UInt8(0x30 + fraction / 100))
        if fraction % 100 != 0 { out.append(UInt8(0x30 + fraction / 10 % 10)) }
        if fraction % 10 != 0 { out.append(UInt8(0x30 + fraction % 10)) }
    }

    /// `value` as the text format writes a metadata value: controls and `\` escaped.
    static func text(_ value: String, into out: inout [UInt8]) {
        if !out.appendUTF8(value, ifAll: { $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C }) {
            out.appendUTF8(EscapingLogHandler.escaped(value))
        }
    }

    /// `value` as a JSON string, quotes included.
    static func json(_ value: String, into out: inout [UInt8]) {
        out.append(0x22)
        if out.appendUTF8(value, ifAll: { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 < 0x7F }) {
            out.append(0x22)
        } else {
            out.removeLast()
            out += JSONValue.string(value).bytes
        }
    }
}
