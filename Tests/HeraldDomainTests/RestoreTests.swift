import Foundation
@testable import HeraldDomain
import HeraldTestSupport
import Synchronization
import Testing

@Suite struct RestoreTests {
    func auctions(_ sink: RecordingSink) -> [Auction] { sink.auctions }

    @Test func anAuctionRecordRoundTrips() throws {
        let clock = ManualClock()
        let sink = RecordingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 9, startingPrice: 5)).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 5))
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 8))
        let restored = AuctionHouse(clock: clock, sink: RecordingSink())
        try restored.restore(auctions(sink))
        #expect(try view(restored.get(id), at: clock.now) == view(house.get(id), at: clock.now))
        #expect(try Array(restored.bids(on: id)) == Array(house.bids(on: id)))
        #expect(try restored.create(NewAuction(item: "next")).id == "2", "ids continue")
    }

    @Test func aRunningCountdownResumesWithTheTimeReallyLeft() throws {
        let clock = ManualClock()
        let sink = RecordingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 10)).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1))
        clock.advance(by: 3)
        house.stop()
        clock.advance(by: 2.5)  // Herald is down for 2.5 s

        let after = RecordingSink()
        let restarted = AuctionHouse(clock: clock, sink: after)
        try restarted.restore(auctions(sink))
        #expect(try restarted.get(id).countdown.remaining(at: clock.now) == 5, "10 − 3 − 2.5, rounded")
        #expect(restarted.liveTimers == 1)
        clock.advance(by: 5)
        #expect(after.ticks == [4, 3, 2, 1])
        #expect(after.winners == ["ann"])
    }

    @Test func aDeadlinePassedWhileDownClosesAtStartOnce() throws {
        let clock = ManualClock()
        let sink = RecordingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 5)).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1))
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 2))
        house.stop()
        clock.advance(by: 60)

        let after = RecordingSink()
        let restarted = AuctionHouse(clock: clock, sink: after)
        try restarted.restore(auctions(sink))
        #expect(after.named("closed").count == 1)
        #expect(after.winners == ["bob"])
        #expect(try restarted.get(id).status == .closed)
        clock.advance(by: 60)
        #expect(after.named("closed").count == 1)

        let again = RecordingSink()
        try AuctionHouse(clock: clock, sink: again).restore(auctions(after))
        #expect(again.events.isEmpty, "a closed auction is not closed twice")
    }

    @Test func aChangeThatCannotBeStoredDoesNotHappen() throws {
        let clock = ManualClock()
        let sink = FailingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 5)).id
        sink.failing = true
        #expect { try house.bid(on: id, NewBid(bidder: "ann", amount: 1)) } throws: { ($0 as? DomainError)?.kind == .unavailable }
        #expect(try house.get(id).bids.isEmpty)
        #expect(house.liveTimers == 0)
        let units = UnitStore(sink: sink)
        #expect(throws: DomainError.self) { try units.put(HeraldDomain.Unit(id: "a", name: "A", status: .healthy)) }
        #expect(units.units().isEmpty)
        // The refused bid left nothing behind in the bids the auction's values share.
        sink.failing = false
        #expect(try house.bid(on: id, NewBid(bidder: "bob", amount: 2)).bid.id == "1")
        #expect(try house.bids(on: id).map(\.bidder) == ["bob"])
    }
}

/// A sink whose store can be made to fail.
final class FailingSink: ChangeSink {
    private let failure = Mutex(false)
    var failing: Bool {
        get { failure.withLock { $0 } }
        set { failure.withLock { $0 = newValue } }
    }

    func publish(_ event: DomainEvent) throws(DomainError) {
        if failing { throw DomainError(.unavailable, "disk on fire") }
    }
    func seed(_ states: [DomainState]) {}
    func perform(_ work: @escaping @Sendable () -> Void) { work() }
}

@Suite struct BidListTests {
    func bid(_ number: Int) -> Bid { Bid(number: number, bidder: "b\(number)", amount: Int64(number), at: Date(timeIntervalSince1970: 0)) }

    /// Values of one auction share their bids: each shows its own first `count`, a copy that appends
    /// does not change the value it was copied from, and one that appends behind another's back gets
    /// storage of its own.
    @Test func copiesShowTheirOwnBids() {
        var original = BidList([bid(1), bid(2)])
        var copy = original
        copy.append(bid(3))
        #expect(original.map(\.amount) == [1, 2])
        #expect(copy.map(\.amount) == [1, 2, 3])
        original.append(bid(30))
        #expect(original.map(\.amount) == [1, 2, 30], "appending behind the copy's back")
        #expect(copy.map(\.amount) == [1, 2, 3], "the copy is untouched")
        copy.append(bid(4))
        #expect(copy.map(\.amount) == [1, 2, 3, 4])
        #expect(original.last?.amount == 30 && BidList().last == nil)
        #expect(Array(copy[2...]).map(\.amount) == [3, 4])
    }
}
