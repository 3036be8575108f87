import Foundation
import HeraldDomain
import HeraldTestSupport
import Testing

@Suite struct AuctionHouseTests {
    let clock = ManualClock()
    let sink = RecordingSink()
    var house: AuctionHouse { AuctionHouse(clock: clock, sink: sink) }

    @Test func countdownStartsAtTheFirstBidTicksEverySecondAndClosesWithTheLastBidder() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "watch", countdownSeconds: 3), in: ChangeBatch()).id
        #expect(clock.pendingTimers == 0)
        clock.advance(by: 10)
        #expect(sink.names == ["auction"], "no countdown before the first bid: only the opening")

        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 10), in: ChangeBatch())
        #expect(house.liveTimers == 1)
        clock.advance(by: 1)
        clock.advance(by: 1)
        #expect(sink.ticks == [2, 1])
        clock.advance(by: 1)
        #expect(sink.winners == ["ann"])
        #expect(try house.get(id).status == .closed)
        #expect(house.liveTimers == 0 && clock.pendingTimers == 0)
        clock.advance(by: 10)
        #expect(sink.named("closed").count == 1)
    }

    @Test func everyBidRestartsTheCountdownAndNeverLeavesTwoTimers() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "vase", countdownSeconds: 3), in: ChangeBatch()).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1), in: ChangeBatch())
        clock.advance(by: 2)
        for (index, bidder) in ["bob", "cem", "dan"].enumerated() {
            _ = try house.bid(on: id, NewBid(bidder: bidder, amount: Int64(10 + index)), in: ChangeBatch())
            #expect(clock.pendingTimers == 1, "one timer per auction, never two")
            #expect(try house.get(id).countdown.remaining(at: clock.now) == 3)
            clock.advance(by: 2)
        }
        #expect(sink.named("closed").isEmpty, "each bid came before zero")
        clock.advance(by: 1)
        #expect(sink.winners == ["dan"])
        #expect(sink.ticks == [2, 1, 2, 1, 2, 1, 2, 1])
    }

    @Test func bidRules() throws {
        let house = self.house
        let id = try house.create(NewAuction(item: "lamp", countdownSeconds: 5, startingPrice: 100), in: ChangeBatch()).id
        #expect(throws: DomainError.self) { try house.bid(on: id, NewBid(bidder: "ann", amount: 99), in: ChangeBatch()) }
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 100), in: ChangeBatch())
        do {
            _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 100), in: ChangeBatch())
            Issue.record("an equal bid must be refused")
        } catch {
            #expect(error.kind == .conflict)
            #expect(error.auction == AuctionConflict(price: 100, minimumBid: 101, closed: false, winner: nil))
        }
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 101), in: ChangeBatch())
        #expect(try house.bids(on: id).count == 2)
        clock.advance(by: 5)
        do {
            _ = try house.bid(on: id, NewBid(bidder: "cem", amount: 500), in: ChangeBatch())
            Issue.record("a bid on a closed auction must be refused")
        } catch {
            #expect(error.kind == .conflict)
            #expect(error.message.contains("closed"))
        }
        #expect(try house.get(id).winner == "bob")
        #expect(throws: DomainError.notFound("auction", "99")) { try house.bid(on: AuctionID(99), NewBid(bidder: "x", amount: 1), in: ChangeBatch()) }
    }
}
