import Foundation
import HeraldDomain
import HeraldJSON
import HeraldTestSupport
import Testing

@Suite struct CountdownTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func restartSchedulesOneSecondAheadWithANewGeneration() {
        var countdown = Countdown(seconds: 3)
        #expect(!countdown.isRunning)
        #expect(countdown.restart(at: start) == .schedule(at: start + 1, generation: 1))
        #expect(countdown.remaining(at: start) == 3)
        #expect(countdown.restart(at: start + 0.5) == .schedule(at: start + 1.5, generation: 2))
        #expect(countdown.deadline == start + 3.5)
    }

    @Test func firesTicksThenExpires() {
        var countdown = Countdown(seconds: 3)
        _ = countdown.restart(at: start)
        #expect(countdown.fire(generation: 1, at: start + 1) == .tick(remaining: 2, next: start + 2, generation: 1))
        #expect(countdown.fire(generation: 1, at: start + 2) == .tick(remaining: 1, next: start + 3, generation: 1))
        #expect(countdown.fire(generation: 1, at: start + 3) == .expire)
        #expect(!countdown.isRunning)
        #expect(countdown.fire(generation: 1, at: start + 4) == .ignore)
    }

    @Test func aTimerFromBeforeARestartIsIgnored() {
        var countdown = Countdown(seconds: 3)
        _ = countdown.restart(at: start)
        _ = countdown.restart(at: start + 0.5)
        #expect(countdown.fire(generation: 1, at: start + 1) == .ignore)
        #expect(countdown.fire(generation: 2, at: start + 1.5) == .tick(remaining: 2, next: start + 2.5, generation: 2))
    }
}

@Suite struct AuctionHouseTests {
    let clock = ManualClock()
    let sink = RecordingSink()
    var house: AuctionHouse { AuctionHouse(clock: clock, sink: sink) }

    @Test func countdownStartsAtTheFirstBidTicksEverySecondAndClosesWithTheLastBidder() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "watch", countdownSeconds: 3))["id"]?.stringValue ?? ""
        #expect(clock.pendingTimers == 0)
        clock.advance(by: 10)
        #expect(sink.events.isEmpty, "no countdown before the first bid")

        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 10))
        #expect(house.liveTimers == 1)
        clock.advance(by: 1)
        clock.advance(by: 1)
        #expect(sink.named("tick").map { $0.payload["remainingSeconds"] } == [.int(2), .int(1)])
        clock.advance(by: 1)
        let closed = try #require(sink.named("closed").first)
        #expect(closed.payload["winner"] == .string("ann"))
        #expect(try house.get(id)["status"] == .string("closed"))
        #expect(house.liveTimers == 0 && clock.pendingTimers == 0)
        clock.advance(by: 10)
        #expect(sink.named("closed").count == 1)
    }

    /// The cached bytes of `GET /auctions/{id}` are the JSON of the moment: a bid, a second of the
    /// countdown and the close each show at once, and between changes the same bytes are shared.
    @Test func theEncodedAuctionIsAlwaysTheCurrentOne() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 3))["id"]?.stringValue ?? ""
        func encoded() throws -> JSONValue { try JSONValue.parse(try house.encoded(id)) }
        #expect(try house.encoded(id) == house.get(id).bytes)
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 10))
        #expect(try encoded()["bidCount"] == .int(1))
        #expect(try encoded()["remainingSeconds"] == .int(3))
        clock.advance(by: 1)
        #expect(try encoded()["remainingSeconds"] == .int(2))
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 20))
        #expect(try encoded()["price"] == .int(20) && encoded()["leader"] == .string("bob"))
        #expect(try house.encoded(id) == house.get(id).bytes)
        clock.advance(by: 3)
        #expect(try encoded()["status"] == .string("closed") && encoded()["winner"] == .string("bob"))
        #expect(try house.encoded(id) == house.get(id).bytes)
        #expect(throws: DomainError.self) { try house.encoded("nope") }
    }

    @Test func everyBidRestartsTheCountdownAndNeverLeavesTwoTimers() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "vase", countdownSeconds: 3))["id"]?.stringValue ?? ""
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1))
        clock.advance(by: 2)
        for (index, bidder) in ["bob", "cem", "dan"].enumerated() {
            _ = try house.bid(on: id, NewBid(bidder: bidder, amount: Int64(10 + index)))
            #expect(clock.pendingTimers == 1, "one timer per auction, never two")
            #expect(try house.get(id)["remainingSeconds"] == .int(3))
            clock.advance(by: 2)
        }
        #expect(sink.named("closed").isEmpty, "each bid came before zero")
        clock.advance(by: 1)
        #expect(sink.named("closed").first?.payload["winner"] == .string("dan"))
        let ticks = sink.named("tick").compactMap { $0.payload["remainingSeconds"]?.intValue }
        #expect(ticks == [2, 1, 2, 1, 2, 1, 2, 1])
    }

    @Test func bidRules() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "lamp", countdownSeconds: 5, startingPrice: 100))["id"]?.stringValue ?? ""
        #expect(throws: DomainError.self) { try house.bid(on: id, NewBid(bidder: "ann", amount: 99)) }
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 100))
        do {
            _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 100))
            Issue.record("an equal bid must be refused")
        } catch {
            #expect(error.kind == .conflict)
            #expect(error.extra.first { $0.0 == "price" }?.1 == .int(100))
        }
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 101))
        #expect(try house.bids(on: id).count == 2)
        clock.advance(by: 5)
        do {
            _ = try house.bid(on: id, NewBid(bidder: "cem", amount: 500))
            Issue.record("a bid on a closed auction must be refused")
        } catch {
            #expect(error.kind == .conflict)
            #expect(error.message.contains("closed"))
        }
        #expect(try house.get(id)["winner"] == .string("bob"))
        #expect(throws: DomainError.notFound("auction", "99")) { try house.bid(on: "99", NewBid(bidder: "x", amount: 1)) }
    }

    @Test func newAuctionValidation() throws {
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
}
