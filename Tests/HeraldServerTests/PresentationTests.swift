import Foundation
import HeraldDomain
import HeraldJSON
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// Trips' display strings, in the locales Herald speaks.
@Suite struct TripDisplayTests {
    func date(_ text: String) -> Date { Timestamp.parse(text) ?? .distantPast }

    var trip: Trip {
        Trip(id: TripID(1), departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
             actualDeparture: date("2015-10-09T13:14:53Z"))
    }

    @Test func displayStringsInEnglish() {
        let display = TripDisplay(trip: trip, style: DisplayStyle(locale: Locale(identifier: "en_US"), timeZone: .utc))
        #expect(display.date == "10/9/2015")
        // ICU puts a narrow no-break space before the day period.
        #expect(display.departure == "1:09\u{202F}PM")
        #expect(display.arrival == "1:26\u{202F}PM")
        #expect(display.duration == "16 min")
        #expect(display.delay == "5 minutes delay")
    }

    @Test func displayStringsInGerman() {
        let display = TripDisplay(trip: trip, style: DisplayStyle(locale: Locale(identifier: "de_DE"), timeZone: .utc))
        #expect(display.date == "9.10.2015")
        #expect(display.departure == "13:09")
        #expect(display.duration == "16 Min.")
        #expect(display.delay == "5 Minuten Verspätung")
    }

    /// The times in a named zone (`?timeZone=`): Berlin is UTC+2 in October, and the date follows the
    /// zone where the day differs (Tokyo is past midnight at 15:09 UTC).
    @Test func displayStringsInATimeZone() throws {
        let berlin = TripDisplay(trip: trip, style: DisplayStyle(locale: Locale(identifier: "de_DE"), timeZone: try #require(TimeZone(identifier: "Europe/Berlin"))))
        #expect(berlin.departure == "15:09" && berlin.arrival == "15:26" && berlin.date == "9.10.2015")
        let late = Trip(id: TripID(2), departure: date("2015-10-09T15:09:53Z"), arrival: date("2015-10-09T15:26:33Z"),
                        actualDeparture: date("2015-10-09T15:09:53Z"))
        let tokyo = TripDisplay(trip: late, style: DisplayStyle(locale: Locale(identifier: "en_US"), timeZone: try #require(TimeZone(identifier: "Asia/Tokyo"))))
        #expect(tokyo.date == "10/10/2015" && tokyo.departure == "12:09\u{202F}AM", "\(tokyo)")
    }

    @Test func noDelayStringWhenOnTime() {
        let onTime = Trip(id: TripID(1), departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                          actualDeparture: date("2015-10-09T13:09:53Z"))
        #expect(TripDisplay(trip: onTime, style: DisplayStyle(locale: Locale(identifier: "en_US"), timeZone: .utc)).delay == nil)
    }

    @Test func aLanguageWithoutStringsIsEnglishAsAWhole() {
        for tag in ["ja_JP", "pt_BR", "xx"] {
            let locale = TripDisplay.supported(Locale(identifier: tag))
            #expect(locale.identifier == "en_US")
            #expect(TripDisplay(trip: trip, style: DisplayStyle(locale: locale, timeZone: .utc)).delay == "5 minutes delay")
        }
        #expect(TripDisplay.supported(Locale(identifier: "de_DE")).identifier == "de_DE")
    }

    @Test func aStoredTripReadsBackAsTheSameTrip() {
        #expect(Trip(document: trip.document) == trip)
        #expect(Trip(document: ["id": "1", "departure": "yesterday"]) == nil)
    }
}

/// `GET /auctions/{id}` shares one encoding and entity tag between changes, and they are always the
/// current ones.
@Suite struct AuctionEncodingTests {
    @Test func theEncodedAuctionAndItsTagAreAlwaysTheCurrentOnes() throws {
        let clock = ManualClock()
        let house = AuctionHouse(clock: clock, sink: InlineSink())
        let encodings = AuctionEncodings()
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 3), in: ChangeBatch()).id
        var tags: Set<String> = []
        func encoded() throws -> JSONValue {
            let auction = try house.get(id)
            let (bytes, etag) = encodings.encoded(auction, at: clock.now)
            #expect(etag == EntityTag.of(auction), "the tag of the auction as it is now")
            tags.insert(etag)
            return try JSONValue.parse(bytes)
        }
        func current() throws -> [UInt8] { try house.get(id).json(at: clock.now).bytes }
        #expect(try encodings.encoded(house.get(id), at: clock.now).bytes == current())
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 10), in: ChangeBatch())
        #expect(try encoded()["bidCount"] == .int(1))
        #expect(try encoded()["remainingSeconds"] == .int(3))
        clock.advance(by: 1)
        #expect(try encoded()["remainingSeconds"] == .int(2))
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 20), in: ChangeBatch())
        #expect(try encoded()["price"] == .int(20) && encoded()["leader"] == .string("bob"))
        clock.advance(by: 3)
        #expect(try encoded()["status"] == .string("closed") && encoded()["winner"] == .string("bob"))
        #expect(try encodings.encoded(house.get(id), at: clock.now).bytes == current())
        #expect(tags.count == 3, "one tag for each bid and one for the close, not one for each second: \(tags)")
    }
}

/// A unit's kept JSON and tag are those of the unit as it is, through changes of each field, and a
/// cache past its limit starts again; every currency's are its own.
@Suite struct UnitAndCurrencyEncodingTests {
    @Test func theKeptUnitAndItsTagAreAlwaysTheCurrentOnes() {
        let encodings = UnitEncodings(limit: 3)
        var units = [HeraldDomain.Unit(id: "a", name: "one", status: .healthy), HeraldDomain.Unit(id: "b", name: "two", status: .healthy)]
        for step in 0..<40 {
            let index = step % units.count
            if step % 3 == 0 { units[index] = HeraldDomain.Unit(id: units[index].id, name: "n\(step)", status: units[index].status) }
            if step % 5 == 0 { units[index] = HeraldDomain.Unit(id: units[index].id, name: units[index].name, status: step % 2 == 0 ? .dead : .wounded) }
            if step == 20 { units.append(HeraldDomain.Unit(id: "c", name: "three", status: .healthy)); units.append(HeraldDomain.Unit(id: "d", name: "four", status: .dead)) }
            for unit in units {
                let (bytes, etag) = encodings.encoded(unit)
                #expect(bytes == unit.json.bytes && etag == EntityTag.of(unit), "\(unit) at step \(step)")
            }
        }
        for currency in Currency.allCases {
            #expect(CurrencyEncodings.encoded(currency).bytes == currency.json.bytes)
            #expect(CurrencyEncodings.encoded(currency).etag == EntityTag.of(currency))
        }
    }
}

/// A unit is stored as its JSON (the bytes its event carries), and reads back as the same unit whatever
/// its name holds; so does a record stored before, which held no `face`.
@Suite struct UnitDocumentTests {
    @Test func theStoredJSONReadsBackAsTheSameUnit() {
        let names = ["scout", "", "say \"hi\"", "back\\slash", "line\nbreak\ttab\r", "\u{01}\u{1F}", "caf\u{E9} \u{1F680}",
                     "sep\u{2028}para\u{2029}", "\u{E2}\u{80}", String(repeating: "x", count: 300)]
        for name in names {
            for status in HeraldDomain.Unit.Status.allCases {
                let unit = HeraldDomain.Unit(id: "u-1_Z", name: name, status: status)
                #expect((try? JSONValue.parse(unit.json.bytes)).flatMap(HeraldDomain.Unit.init(document:)) == unit,
                        "\(name.debugDescription) \(status)")
                let before: JSONValue = ["id": .string(unit.id), "name": .string(name), "status": .string(status.rawValue)]
                #expect((try? JSONValue.parse(before.bytes)).flatMap(HeraldDomain.Unit.init(document:)) == unit)
            }
        }
        // What a restore refuses: a status it does not know, or a field missing.
        #expect(HeraldDomain.Unit(document: ["id": "u", "name": "n", "status": "asleep"]) == nil)
        #expect(HeraldDomain.Unit(document: ["id": "u", "status": "dead"]) == nil)
    }
}

/// A sink that takes every change and keeps nothing.
final class InlineSink: ChangeSink {
    func publish(_ event: DomainEvent, in batch: ChangeBatch) {}
    func seed(_ states: [DomainState]) {}
    func perform(_ work: @escaping @Sendable (ChangeBatch) -> Void) { work(ChangeBatch()) }
}
