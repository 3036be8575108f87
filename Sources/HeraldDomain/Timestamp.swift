import Foundation
import HeraldJSON

/// RFC 3339 times, always written in UTC.
public enum Timestamp {
    /// Parses an RFC 3339 date-time, with or without fractional seconds.
    public static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `2015-10-09T13:09:53Z`; fractional seconds only when there are any.
    public static func format(_ date: Date) -> String {
        let whole = date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
        return whole
            ? date.formatted(.iso8601)
            : date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    public static func json(_ date: Date?) -> JSONValue {
        date.map { .string(format($0)) } ?? .null
    }
}
