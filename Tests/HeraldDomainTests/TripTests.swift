import Foundation
import HeraldDomain
import HeraldJSON
import Testing

@Suite struct TripTests {
    func date(_ text: String) -> Date { Timestamp.parse(text) ?? .distantPast }

    var seed: NewTrip {
        NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                actualDeparture: date("2015-10-09T13:14:53Z"))
    }

    @Test func delayAndFlagFollowTheActualDeparture() throws {
        let board = TripBoard(sink: RecordingSink())
        let trip = try board.create(seed)
        #expect(trip.durationSeconds == 1000)
        #expect(trip.delaySeconds == 300 && trip.delayed)
        let early = try board.delay(trip.id, json: ["deltaSeconds": -360])
        #expect(early.delaySeconds == -60 && !early.delayed)
        let patched = try board.patch(trip.id, json: ["actualDeparture": "2015-10-09T13:09:53Z"])
        #expect(patched.delaySeconds == 0 && !patched.delayed)
    }

    @Test func displayStringsInEnglish() throws {
        let board = TripBoard(sink: RecordingSink())
        let display = TripDisplay(trip: try board.create(seed), locale: Locale(identifier: "en_US"))
        #expect(display.date == "10/9/2015")
        // ICU puts a narrow no-break space before the day period.
        #expect(display.departure == "1:09\u{202F}PM")
        #expect(display.arrival == "1:26\u{202F}PM")
        #expect(display.duration == "16 min")
        #expect(display.delay == "5 minutes delay")
    }

    @Test func displayStringsInGerman() throws {
        let board = TripBoard(sink: RecordingSink())
        let display = TripDisplay(trip: try board.create(seed), locale: Locale(identifier: "de_DE"))
        #expect(display.date == "9.10.2015")
        #expect(display.departure == "13:09")
        #expect(display.duration == "16 Min.")
        #expect(display.delay == "5 Minuten Verspätung")
    }

    @Test func noDelayStringWhenOnTime() {
        let trip = Trip(id: "1", departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                        actualDeparture: date("2015-10-09T13:09:53Z"))
        #expect(TripDisplay(trip: trip, locale: Locale(identifier: "en_US")).delay == nil)
    }

    @Test func changesNameTheFieldsTheyTouch() throws {
        let sink = RecordingSink()
        let board = TripBoard(sink: sink)
        let trip = try board.create(NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z")))
        _ = try board.delay(trip.id, json: ["deltaSeconds": 60])
        _ = try board.delay(trip.id, json: ["deltaSeconds": 60])
        #expect(sink.events.map(\.tags) == [["actualDeparture", "delay", "delayed"], ["actualDeparture", "delay"]])
    }

    @Test func invalidInputIsRefusedWithTheFields() throws {
        let board = TripBoard(sink: RecordingSink())
        #expect(throws: DomainError.self) {
            try NewTrip(json: ["departure": "2015-10-09T13:26:33Z", "arrival": "2015-10-09T13:09:53Z"])
        }
        #expect(throws: DomainError.self) { try NewTrip(json: ["departure": "yesterday", "arrival": "2015-10-09T13:09:53Z"]) }
        let trip = try board.create(seed)
        #expect(throws: DomainError.self) { try board.delay(trip.id, json: ["deltaSeconds": 0]) }
        #expect(throws: DomainError.self) { try board.delay(trip.id, json: ["deltaSeconds": 86_401]) }
        #expect(throws: DomainError.notFound("trip", "42")) { try board.delay("42", json: ["deltaSeconds": 5]) }
    }
}

@Suite struct UnitAndCurrencyTests {
    @Test func unitsPublishToTheirOwnTopicWithTheCollectionValue() throws {
        let sink = RecordingSink()
        let store = UnitStore(sink: sink)
        let first = try store.put(id: "a", json: ["name": "Alpha", "status": "healthy"])
        #expect(first.created && first.unit["face"] == .string("🙂"))
        #expect(try !store.put(id: "a", json: ["name": "Alpha", "status": "dead"]).created)
        try store.delete("a")
        #expect(sink.all.map(\.topic) == ["units/a", "units/a", "units/a"])
        #expect(sink.names == ["unit", "unit", "removed"])
        #expect(sink.all.last?.values.first?.value == nil, "a removed unit has no current value")
        #expect(throws: DomainError.self) { try store.put(id: "bad id!", json: ["name": "x", "status": "healthy"]) }
        #expect(throws: DomainError.self) { try store.put(id: "b", json: ["name": "x", "status": "asleep"]) }
        #expect(throws: DomainError.notFound("unit", "a")) { try store.delete("a") }
    }

    @Test func currencyNotifiesOnlyRealChanges() throws {
        let sink = RecordingSink()
        let currency = CurrencySetting(sink: sink)
        _ = try currency.set(json: ["default": "dollar"])
        #expect(sink.all.isEmpty)
        _ = try currency.set(json: ["default": "euro"])
        #expect(sink.all.first?.payload == ["default": "euro", "previous": "dollar"])
        do {
            _ = try currency.set(json: ["default": "yen"])
            Issue.record("an unknown currency must be refused")
        } catch {
            #expect(error.fields.first?.message.contains("gramGold") == true)
        }
        #expect(currency.value == .euro)
    }
}

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

@Suite struct TripRangeTests {
    @Test func datesOutsideYears1To9999AreRefusedNotStored() throws {
        let sink = RecordingSink()
        let trips = TripBoard(sink: sink)
        let trip = try trips.create(NewTrip(departure: Timestamp.parse("2015-10-09T13:09:53Z") ?? .now,
                                            arrival: Timestamp.parse("2015-10-09T13:26:33Z") ?? .now))
        _ = try trips.patch(trip.id, json: ["actualDeparture": "9999-12-31T23:59:59Z"])
        #expect(throws: DomainError.self) { try trips.delay(trip.id, json: ["deltaSeconds": 86_400]) }
        #expect(trips.trips().first.map { Timestamp.format($0.actualDeparture) } == "9999-12-31T23:59:59Z")
        #expect(Timestamp.parse("0001-01-01T00:00:00+01:00") == nil, "an offset may not carry a time below year 1")
        #expect(Timestamp.parse("9999-12-31T23:59:59-01:00") == nil, "nor past year 9999")
        _ = try trips.patch(trip.id, json: ["actualDeparture": "0001-01-01T00:00:00Z"])
        #expect(throws: DomainError.self) { try trips.delay(trip.id, json: ["deltaSeconds": -1]) }
        for record in sink.all.flatMap(\.records) where record.kind == TripBoard.recordKind {
            for field in ["departure", "arrival", "actualDeparture"] {
                #expect(record.document?[field]?.stringValue.flatMap(Timestamp.parse) != nil, "stored \(field) reads back")
            }
        }
    }

    @Test func fieldsThatCannotChangeAreRefused() throws {
        let trips = TripBoard(sink: RecordingSink())
        let trip = try trips.create(NewTrip(departure: Timestamp.parse("2015-10-09T13:09:53Z") ?? .now,
                                            arrival: Timestamp.parse("2015-10-09T13:26:33Z") ?? .now))
        #expect(throws: DomainError.self) {
            try trips.patch(trip.id, json: ["actualDeparture": "2015-10-09T13:19:53Z", "departure": "2015-10-09T13:00:00Z"])
        }
        #expect(try trips.get(trip.id) == trip)
    }

    @Test func aLanguageWithoutStringsIsEnglishAsAWhole() throws {
        let trip = Trip(id: "1", departure: Timestamp.parse("2015-10-09T13:09:53Z") ?? .now,
                        arrival: Timestamp.parse("2015-10-09T13:26:33Z") ?? .now, actualDeparture: Timestamp.parse("2015-10-09T13:14:53Z") ?? .now)
        for tag in ["ja_JP", "pt_BR", "xx"] {
            let locale = TripDisplay.supported(Locale(identifier: tag))
            #expect(locale.identifier == "en_US")
            #expect(TripDisplay(trip: trip, locale: locale).delay == "5 minutes delay")
        }
        #expect(TripDisplay.supported(Locale(identifier: "de_DE")).identifier == "de_DE")
    }
}
