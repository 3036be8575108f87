import Foundation
@testable import HeraldDomain
import HeraldTestSupport
import Testing

/// Times under mutated input (`Fuzzing`).
@Suite struct TimestampPropertyTests {
    /// A time that parses is in range and is already what the store keeps: formatted (as the store
    /// writes it) and parsed again, it is the same instant, so memory and store agree after a restart
    /// (microseconds were kept in memory and rounded in the store, and a delay changed by one second).
    @Test func timestampsThatParseAreInRangeAndFormatBack() {
        Fuzzing.fuzz(["2015-10-09T13:09:53Z", "2015-10-09T13:09:53.25+02:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
              "2016-02-29t23:59:60-23:59", "2015-10-09T13:10:52.9996Z", "9999-12-31T23:59:59.99999Z", "2015-10-09T13:09:53.0004999Z"],
             salt: 2) { bytes in
            guard let date = Timestamp.parse(String(decoding: bytes, as: UTF8.self)) else { return }
            #expect(Timestamp.range.contains(date))
            let formatted = Timestamp.format(date)
            #expect(Timestamp.parse(formatted) == date, "\(formatted)")
        }
        #expect(Timestamp.format(Timestamp.parse("2015-10-09T13:10:52.9996Z") ?? .distantPast) == "2015-10-09T13:10:52.999Z",
                "a time is kept to the millisecond it is in")
        for text in ["2015-10-09T13:10:52.999Z", "2015-10-09T13:10:52.001Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.999Z"] {
            #expect(Timestamp.format(Timestamp.parse(text) ?? .distantPast) == text, "milliseconds are exact")
        }
    }
}

@Suite struct TimestampParseTests {
    /// `parse` counts the days of years from 1583 on by arithmetic: for days across those years, real
    /// ones and ones no month has (31 April, 29 February of 1700), it reads what the calendar read.
    @Test func theArithmeticReadsWhatTheCalendarRead() {
        var generator = SystemRandomNumberGenerator()
        var days = [(1583, 1, 1), (1600, 2, 29), (1700, 2, 29), (1900, 2, 29), (2000, 2, 29), (2024, 2, 29), (2025, 2, 29),
                    (2025, 4, 31), (1970, 1, 1), (1969, 12, 31), (9999, 12, 31)]
        for _ in 0..<20_000 {
            days.append((Int.random(in: 1583...9999, using: &generator), Int.random(in: 1...12, using: &generator),
                         Int.random(in: 1...31, using: &generator)))
        }
        var read = 0
        for (year, month, day) in days {
            let text = String(format: "%04d-%02d-%02dT00:00:00Z", year, month, day)
            let calendars = Timestamp.calendarMidnight(year: year, month: month, day: day)
            #expect(Timestamp.parse(text)?.timeIntervalSince1970 == calendars, "\(text)")
            if calendars != nil { read += 1 }
        }
        #expect(read > days.count / 2, "most of the days are real ones")
        #expect(Timestamp.parse("1700-02-29T00:00:00Z") == nil && Timestamp.parse("2000-02-29T00:00:00Z") != nil)
        #expect(Timestamp.parse("1582-10-10T00:00:00Z") == nil, "a day the calendar dropped in 1582 is none")
        #expect(Timestamp.parse("1500-02-29T12:00:00Z") != nil, "1500 is a Julian leap year")
    }
}

@Suite struct TimestampFormatTests {
    /// `format` writes the C library's breakdown by hand: for instants across the whole range, with and
    /// without milliseconds, it writes what the calendar wrote.
    @Test func theCLibrarysBreakdownWritesWhatTheCalendarWrote() {
        var generator = SystemRandomNumberGenerator()
        let (first, last) = (Timestamp.range.lowerBound.timeIntervalSince1970, Timestamp.range.upperBound.timeIntervalSince1970)
        let edges = [first, last, 0, -0.001, 951_782_400, 4_107_542_399.999, 1_764_118_000.5]
        for _ in 0..<20_000 {
            let milliseconds = (Double.random(in: first...last, using: &generator) * 1000).rounded()
            let seconds = (milliseconds / 1000).rounded(.down)
            let fraction = Bool.random(using: &generator) ? 0 : Int(milliseconds - seconds * 1000)
            let date = Date(timeIntervalSince1970: seconds + Double(fraction) / 1000)
            #expect(Timestamp.format(date) == Timestamp.calendarFormat(seconds: seconds, fraction: fraction), "\(seconds) \(fraction)")
        }
        for edge in edges {
            let milliseconds = (edge * 1000).rounded()
            let seconds = (milliseconds / 1000).rounded(.down)
            #expect(Timestamp.format(Date(timeIntervalSince1970: edge))
                    == Timestamp.calendarFormat(seconds: seconds, fraction: Int(milliseconds - seconds * 1000)), "\(edge)")
        }
    }
}
