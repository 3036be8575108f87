import Foundation
import HeraldDomain
import Testing

@Suite struct TripTests {
    func date(_ text: String) -> Date { Timestamp.parse(text) ?? .distantPast }

    var seed: NewTrip {
        NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                actualDeparture: date("2015-10-09T13:14:53Z"))
    }

    @Test func delayAndFlagFollowTheActualDeparture() throws {
        let board = TripBoard(sink: RecordingSink())
        let trip = try board.create(seed, in: ChangeBatch())
        #expect(trip.durationSeconds == 1000)
        #expect(trip.delaySeconds == 300 && trip.delayed)
        let early = try board.delay(trip.id, bySeconds: -360, in: ChangeBatch())
        #expect(early.delaySeconds == -60 && !early.delayed)
        let patched = try board.setActualDeparture(trip.id, to: date("2015-10-09T13:09:53Z"), in: ChangeBatch())
        #expect(patched.delaySeconds == 0 && !patched.delayed)
    }




    @Test func changesNameTheFieldsTheyTouch() throws {
        let sink = RecordingSink()
        let board = TripBoard(sink: sink)
        let trip = try board.create(NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z")), in: ChangeBatch())
        _ = try board.delay(trip.id, bySeconds: 60, in: ChangeBatch())
        _ = try board.delay(trip.id, bySeconds: 60, in: ChangeBatch())
        let changed = sink.all.compactMap { if case .tripMoved(_, let changed) = $0 { changed } else { nil } }
        #expect(changed == [[.actualDeparture, .delay, .delayed], [.actualDeparture, .delay]])
        #expect(sink.names == ["trip", "trip", "trip"], "a new trip is an event, which its collection's observers see it enter by")
    }
}

@Suite struct TripRangeTests {
    func date(_ text: String) -> Date { Timestamp.parse(text) ?? .distantPast }

    @Test func datesOutsideYears1To9999AreRefusedNotStored() throws {
        let sink = RecordingSink()
        let trips = TripBoard(sink: sink)
        let trip = try trips.create(NewTrip(departure: Timestamp.parse("2015-10-09T13:09:53Z") ?? .now,
                                            arrival: Timestamp.parse("2015-10-09T13:26:33Z") ?? .now), in: ChangeBatch())
        _ = try trips.setActualDeparture(trip.id, to: date("9999-12-31T23:59:59Z"), in: ChangeBatch())
        #expect(throws: DomainError.self) { try trips.delay(trip.id, bySeconds: 86_400, in: ChangeBatch()) }
        #expect(trips.trips().first.map { Timestamp.format($0.actualDeparture) } == "9999-12-31T23:59:59Z")
        #expect(Timestamp.parse("0001-01-01T00:00:00+01:00") == nil, "an offset may not carry a time below year 1")
        #expect(Timestamp.parse("9999-12-31T23:59:59-01:00") == nil, "nor past year 9999")
        _ = try trips.setActualDeparture(trip.id, to: date("0001-01-01T00:00:00Z"), in: ChangeBatch())
        #expect(throws: DomainError.self) { try trips.delay(trip.id, bySeconds: -1, in: ChangeBatch()) }
        for case .tripMoved(let moved, _) in sink.all {
            #expect(Timestamp.parse(Timestamp.format(moved.actualDeparture)) == moved.actualDeparture, "what is published reads back")
        }
    }

}
