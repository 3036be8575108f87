public import Foundation
import HeraldJSON
import HeraldThreads
public import Logging
import Synchronization

/// swift-log's handler for `--log-format json`: one JSON object per line on standard error, for log
/// collectors in containers. Fields: `time` (RFC 3339, UTC, milliseconds), `level`, `message`, `logger`,
/// then the metadata as strings under their own names (`http.request_id`, `http.route`, `http.status`,
/// `http.duration_ms`, …).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let output: Output

    /// Where lines go: one `write` each, under a lock, so lines from threads never mix.
    public final class Output: Sendable {
        private let descriptor: Int32
        private let lock = CriticalSection()

        public init(descriptor: Int32) { self.descriptor = descriptor }

        public static let standardError = Output(descriptor: 2)

        func write(_ line: [UInt8]) {
            lock.run {
                var offset = 0
                while offset < line.count {
                    let written = line.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }

    public init(label: String, output: Output = .standardError) {
        self.label = label
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        output.write(Self.line(time: Date(), level: event.level, message: "\(event.message)", label: label,
                               metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
    }

    /// One log line: the JSON object and a newline.
    public static func line(time: Date, level: Logger.Level, message: String, label: String, metadata: Logger.Metadata) -> [UInt8] {
        var members: [(String, JSONValue)] = [
            ("time", .string(timestamp(time))), ("level", .string(level.rawValue)), ("message", .string(message)), ("logger", .string(label)),
        ]
        for key in metadata.keys.sorted() {
            if let value = metadata[key] { members.append((key, .string("\(value)"))) }
        }
        return JSONValue.object(members).bytes + [0x0A]
    }

    /// `2026-11-23T02:41:07.123Z`.
    public static func timestamp(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let milliseconds = min(Int((interval - Double(seconds)) * 1000), 999)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }
}
