import Foundation
import HeraldDomain
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
