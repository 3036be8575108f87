public import Foundation


/// RFC 3339 times, always written in UTC.
public enum Timestamp {
    /// The Gregorian calendar in UTC, made once: making one per call costs more than the formatting.
    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        return calendar
    }()

    /// The first and last instants RFC 3339 can write (years 0001 to 9999).
    public static let range: ClosedRange<Date> = {
        let first = utc.date(from: DateComponents(year: 1, month: 1, day: 1)) ?? .distantPast
        let last = utc.date(from: DateComponents(year: 10000, month: 1, day: 1)) ?? .distantFuture
        return first...last.addingTimeInterval(-0.001)
    }()

    /// Parses an RFC 3339 date-time (`2015-10-09T13:09:53Z`, `…53.25+02:00`), strictly: every field in
    /// range, no rolling over of a minute 99 into the next hour.
    ///
    /// Hand-written, kept: on Linux with Swift 6.3, Foundation's `Date.ISO8601FormatStyle` reads
    /// `13:99:53` as `14:39:53` and February 30 as March 2, `ISO8601DateFormatter` also takes February 30
    /// and needs a second formatter for fractions, and neither takes RFC 3339's `t` or space separator.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8(parse(bytes:))
    }

    private static func parse(bytes c: UnsafeBufferPointer<UInt8>) -> Date? {
        func number(_ start: Int, _ length: Int) -> Int? {
            guard start + length <= c.count else { return nil }
            var value = 0
            for byte in c[start..<(start + length)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        func byte(_ index: Int) -> UInt8? { index < c.count ? c[index] : nil }
        guard let year = number(0, 4), byte(4) == 0x2D, let month = number(5, 2), byte(7) == 0x2D,
              let day = number(8, 2), byte(10) == 0x54 || byte(10) == 0x74 || byte(10) == 0x20,
              let hour = number(11, 2), byte(13) == 0x3A, let minute = number(14, 2), byte(16) == 0x3A,
              let second = number(17, 2),
              year >= 1, (1...12).contains(month), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        // The first three digits of a fraction are its milliseconds; later ones are read, not kept.
        var milliseconds = 0
        if byte(index) == 0x2E {
            index += 1
            let start = index
            while let digit = byte(index), digit >= 0x30, digit <= 0x39 {
                if index - start < 3 { milliseconds += Int(digit - 0x30) * [100, 10, 1][index - start] }
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        switch byte(index) {
        case 0x5A, 0x7A:
            index += 1
        case 0x2B, 0x2D:
            guard let hours = number(index + 1, 2), byte(index + 3) == 0x3A, let minutes = number(index + 4, 2),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 3600 + minutes * 60) * (byte(index) == 0x2D ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == c.count, day >= 1, day <= daysIn(month: month, of: year) else { return nil }  // no 31 February
        let midnight: TimeInterval
        if year >= 1583 {
            // Gregorian, as the calendar is from October 1582 on, by arithmetic: the calendar's
            // date(from:) and component(.day) were 3 % of a replica's CPU taking in others' changes.
            midnight = TimeInterval(daysSince1970(year: year, month: month, day: day) * 86_400)
        } else {
            // Julian before, as Foundation's calendar counts (and `format` writes) those years.
            guard let calendars = calendarMidnight(year: year, month: month, day: day) else { return nil }
            midnight = calendars
        }
        // Kept to the millisecond it is in, as the store writes it: microseconds kept in memory only
        // would make a delay differ by a second before and after a restart.
        let seconds = midnight + TimeInterval(hour * 3600 + minute * 60 + min(second, 59)) - TimeInterval(offset)
        let instant = Date(timeIntervalSince1970: seconds + TimeInterval(milliseconds) / 1000)
        // An offset can carry 0001-01-01T00:00:00+01:00 out of what can be written back.
        return range.contains(instant) ? instant : nil
    }

    /// The calendar's way to a day's first instant, which `parse` took for every year before (tests
    /// compare the two); nil for a day the calendar does not have (one of the ten dropped in October
    /// 1582, or one it would roll over into the next month).
    static func calendarMidnight(year: Int, month: Int, day: Int) -> TimeInterval? {
        guard let date = utc.date(from: DateComponents(year: year, month: month, day: day)), utc.component(.day, from: date) == day else {
            return nil
        }
        return date.timeIntervalSince1970
    }

    /// The days of `month` in `year`: leap years as the Gregorian calendar counts them from 1583, and
    /// as the Julian one before.
    private static func daysIn(month: Int, of year: Int) -> Int {
        guard month == 2 else { return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] }
        let leap = year % 4 == 0 && (year < 1583 || year % 100 != 0 || year % 400 == 0)
        return leap ? 29 : 28
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`), for years from 1 on.
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y / 400, yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `2015-10-09T13:09:53Z`, or `…53.250Z` with milliseconds, rounded to the nearest: formatting a
    /// parsed timestamp gives back the same text.
    public static func format(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let seconds = (milliseconds / 1000).rounded(.down)
        let fraction = Int(milliseconds - seconds * 1000)
        // The C library's UTC breakdown, written by hand: the calendar's dateComponents was 8 % of a
        // GET /auctions/{id} (its ETag formats three instants). The C library's calendar is Gregorian
        // all the way back, Foundation's is Julian before October 1582 (and `parse` reads with it), so
        // years before 1583, and after 9999, go the calendar's way.
        var parts = tm()
        guard var time = time_t(exactly: seconds), gmtime_r(&time, &parts) != nil, (1583...9999).contains(Int(parts.tm_year) + 1900) else {
            return calendarFormat(seconds: seconds, fraction: fraction)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func put(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                bytes.append(0x30 + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, 4)
        bytes.append(0x2D)
        put(Int(parts.tm_mon) + 1, 2)
        bytes.append(0x2D)
        put(Int(parts.tm_mday), 2)
        bytes.append(0x54)
        put(Int(parts.tm_hour), 2)
        bytes.append(0x3A)
        put(Int(parts.tm_min), 2)
        bytes.append(0x3A)
        put(Int(parts.tm_sec), 2)
        if fraction != 0 {
            bytes.append(0x2E)
            put(fraction, 3)
        }
        bytes.append(0x5A)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The calendar's way, which `format` took before (tests compare the two).
    static func calendarFormat(seconds: Double, fraction: Int) -> String {
        let parts = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: seconds))
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let whole = "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2))"
        return fraction == 0 ? whole + "Z" : whole + "." + pad(fraction, 3) + "Z"
    }
}
