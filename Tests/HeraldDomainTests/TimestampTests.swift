import Foundation
import HeraldDomain
import Testing

@Suite struct TimestampTests {
    @Test func parsesRFC3339WithOffsetsAndFractions() {
        #expect(Timestamp.parse("2015-10-09T13:09:53Z")?.timeIntervalSince1970 == 1_444_396_193)
        #expect(Timestamp.parse("2015-10-09T15:09:53+02:00")?.timeIntervalSince1970 == 1_444_396_193)
        #expect(Timestamp.parse("2015-10-09T13:09:53.5Z")?.timeIntervalSince1970 == 1_444_396_193.5)
        #expect(Timestamp.format(Timestamp.parse("2015-10-09T13:09:53Z") ?? .distantPast) == "2015-10-09T13:09:53Z")
        for text in ["2026-11-22T00:31:59.621Z", "2026-11-22T00:31:59.999Z", "0046-08-05T15:17:21.260Z", "2015-10-09T13:09:53.001Z"] {
            #expect(Timestamp.format(Timestamp.parse(text) ?? .distantPast) == text)
        }
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1.9996)) == "1970-01-01T00:00:02Z", "rounding carries into the second")
    }

    @Test func refusesOutOfRangeFieldsInsteadOfRollingOver() {
        for text in ["2024-01-01T12:99:00Z", "2024-02-30T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
                     "2024-01-01T00:00:00", "2024-01-01", "2024-01-01T00:00:00Zjunk", "2024-01-01T00:00:00.Z"] {
            #expect(Timestamp.parse(text) == nil, "\(text)")
        }
    }
}
