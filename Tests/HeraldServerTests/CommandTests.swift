import Foundation
import HeraldDomain
import HeraldJSON
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// Request bodies become typed commands; every invalid field is named at once.
@Suite struct CommandTests {
    @Test func newAuctionAndBid() throws {
        #expect(try NewAuction(json: ["item": "x"]) == NewAuction(item: "x", countdownSeconds: 7, startingPrice: 0))
        do {
            _ = try NewAuction(json: ["item": "", "countdownSeconds": 0, "startingPrice": "5"])
            Issue.record("invalid values must be refused")
        } catch {
            #expect(error.kind == .invalid)
            #expect(Set(error.fields.map(\.field)) == ["item", "countdownSeconds", "startingPrice"])
        }
        #expect(throws: DomainError.self) { try NewAuction(json: ["item": "x", "countdownSeconds": 3601]) }
        #expect(throws: DomainError.self) { try NewBid(json: ["bidder": "ann", "amount": .double(1.5)]) }
        #expect(throws: DomainError.self) { try NewBid(json: ["bidder": "ann", "amount": .bool(true)]) }
        #expect(throws: DomainError.self) { try NewBid(json: [.int(1)]) }
    }

    /// Lengths are counted in code points, as openapi.yaml's maxLength is: a combining mark
    /// (U+1CF14, found by schemathesis) joins the character before it into one grapheme but is a code point of its own.
    @Test func lengthsCountCodePoints() throws {
        let marked = "%\u{1CF14}" + String(repeating: "*", count: 198)
        #expect(marked.count == 199)
        #expect(marked.unicodeScalars.count == 200)
        #expect(try NewAuction(json: ["item": .string(marked)]).item == marked)
        #expect(throws: DomainError.self) { try NewAuction(json: ["item": .string(marked + "*")]) }
        #expect(throws: DomainError.self) { try NewBid(json: ["bidder": .string("e\u{301}" + String(repeating: "b", count: 99)), "amount": 5]) }
    }

    @Test func unitsAndCurrency() throws {
        #expect(try HeraldDomain.Unit(id: "a", json: ["name": "Alpha", "status": "healthy"]) == HeraldDomain.Unit(id: "a", name: "Alpha", status: .healthy))
        do {
            _ = try HeraldDomain.Unit(id: "bad id!", json: ["name": "", "status": "asleep"])
            Issue.record("invalid values must be refused")
        } catch {
            #expect(Set(error.fields.map(\.field)) == ["id", "name", "status"])
        }
        #expect(try Currency(json: ["default": "euro"]) == .euro)
        do {
            _ = try Currency(json: ["default": "yen"])
            Issue.record("an unknown currency must be refused")
        } catch {
            #expect(error.fields.first?.message.contains("gramGold") == true)
        }
    }

    @Test func trips() throws {
        #expect(throws: DomainError.self) { try NewTrip(json: ["departure": "2015-10-09T13:26:33Z", "arrival": "2015-10-09T13:09:53Z"]) }
        #expect(throws: DomainError.self) { try NewTrip(json: ["departure": "yesterday", "arrival": "2015-10-09T13:09:53Z"]) }
        #expect(throws: DomainError.self) { try TripDelay(json: ["deltaSeconds": 0]) }
        #expect(throws: DomainError.self) { try TripDelay(json: ["deltaSeconds": 86_401]) }
        #expect(try TripDelay(json: ["deltaSeconds": -60]).seconds == -60)
        #expect(throws: DomainError.self) {
            try TripPatch(json: ["actualDeparture": "2015-10-09T13:19:53Z", "departure": "2015-10-09T13:00:00Z"])
        }
        #expect(try TripPatch(json: ["actualDeparture": "2015-10-09T13:19:53Z"]).actualDeparture == Timestamp.parse("2015-10-09T13:19:53Z"))
    }
}
