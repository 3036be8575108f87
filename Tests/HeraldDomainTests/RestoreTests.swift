import HeraldThreads
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
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 9, startingPrice: 5), in: ChangeBatch()).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 5), in: ChangeBatch())
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 8), in: ChangeBatch())
        let restored = AuctionHouse(clock: clock, sink: RecordingSink())
        try restored.restore(auctions(sink), in: ChangeBatch())
        #expect(try view(restored.get(id), at: clock.now) == view(house.get(id), at: clock.now))
        #expect(try Array(restored.bids(on: id)) == Array(house.bids(on: id)))
        #expect(try restored.create(NewAuction(item: "next"), in: ChangeBatch()).id == AuctionID(2), "ids continue")
    }

    @Test func aRunningCountdownResumesWithTheTimeReallyLeft() throws {
        let clock = ManualClock()
        let sink = RecordingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 10), in: ChangeBatch()).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1), in: ChangeBatch())
        clock.advance(by: 3)
        house.stop()
        clock.advance(by: 2.5)  // Herald is down for 2.5 s

        let after = RecordingSink()
        let restarted = AuctionHouse(clock: clock, sink: after)
        try restarted.restore(auctions(sink), in: ChangeBatch())
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
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 5), in: ChangeBatch()).id
        _ = try house.bid(on: id, NewBid(bidder: "ann", amount: 1), in: ChangeBatch())
        _ = try house.bid(on: id, NewBid(bidder: "bob", amount: 2), in: ChangeBatch())
        house.stop()
        clock.advance(by: 60)

        let after = RecordingSink()
        let restarted = AuctionHouse(clock: clock, sink: after)
        try restarted.restore(auctions(sink), in: ChangeBatch())
        #expect(after.named("closed").count == 1)
        #expect(after.winners == ["bob"])
        #expect(try restarted.get(id).status == .closed)
        clock.advance(by: 60)
        #expect(after.named("closed").count == 1)

        let again = RecordingSink()
        try AuctionHouse(clock: clock, sink: again).restore(auctions(after), in: ChangeBatch())
        #expect(again.events.isEmpty, "a closed auction is not closed twice")
    }

    /// A replica catching up merges the auctions another changed: a new one joins in id order, a
    /// bid taken elsewhere restarts the countdown here with one timer (never two), one whose deadline
    /// passed closes once, and the auctions not named stay as they are.
    @Test func mergingWhatAnotherReplicaChangedKeepsOneTimerPerAuction() throws {
        let clock = ManualClock()
        let elsewhere = RecordingSink()
        let other = AuctionHouse(clock: clock, sink: elsewhere)
        let (first, second) = (try other.create(NewAuction(item: "one", countdownSeconds: 10), in: ChangeBatch()).id,
                               try other.create(NewAuction(item: "two", countdownSeconds: 5), in: ChangeBatch()).id)
        _ = try other.bid(on: first, NewBid(bidder: "ann", amount: 1), in: ChangeBatch())
        _ = try other.bid(on: second, NewBid(bidder: "bob", amount: 1), in: ChangeBatch())
        defer { other.stop() }

        let here = RecordingSink()
        let house = AuctionHouse(clock: clock, sink: here)
        try house.restore([], in: ChangeBatch())
        _ = try house.create(NewAuction(item: "mine"), in: ChangeBatch())  // id 1 here too: replaced by the merge
        try house.merge(auctions(elsewhere), in: ChangeBatch())
        #expect(house.auctions(status: nil).map(\.id) == [first, second])
        #expect(try house.get(first).item == "one")
        #expect(house.liveTimers == 2)
        #expect(clock.pendingTimers == other.liveTimers + house.liveTimers, "mine's none, and one for each merged")
        clock.advance(by: 3)
        // Auction one takes a bid elsewhere: merged again, its countdown restarts at 10 with one timer.
        _ = try other.bid(on: first, NewBid(bidder: "cy", amount: 2), in: ChangeBatch())
        try house.merge([try other.get(first)], in: ChangeBatch())
        #expect(house.liveTimers == 2)
        #expect(clock.pendingTimers == other.liveTimers + house.liveTimers, "the replaced countdown's timer is cancelled")
        clock.advance(by: 3)  // auction two's deadline (5 s) passes; one's (10 s after the bid) does not
        #expect(here.winners == ["bob"], "two closed once")
        clock.advance(by: 8)
        #expect(here.winners == ["bob", "cy"], "one closed once, with the bid taken elsewhere")
        #expect(here.named("closed").count == 2)
    }

    /// A replica catching up from PostgreSQL gets each changed auction with only the bids it missed,
    /// and how many there are in all: they follow the bids it holds. When they do not add up (a bid
    /// missing between, or a count that says more), nothing is taken, and the answer says to read all.
    @Test func mergingOnlyTheMissedBidsAppendsThemOrTakesNothing() throws {
        let clock = ManualClock()
        let other = AuctionHouse(clock: clock, sink: RecordingSink())
        defer { other.stop() }
        let id = try other.create(NewAuction(item: "one", countdownSeconds: 10), in: ChangeBatch()).id
        _ = try other.bid(on: id, NewBid(bidder: "ann", amount: 1), in: ChangeBatch())
        let house = AuctionHouse(clock: clock, sink: RecordingSink())
        defer { house.stop() }
        try house.restore([try other.get(id)], in: ChangeBatch())
        _ = try other.bid(on: id, NewBid(bidder: "bob", amount: 2), in: ChangeBatch())
        _ = try other.bid(on: id, NewBid(bidder: "cy", amount: 3), in: ChangeBatch())
        let whole = try other.get(id)
        func missed(_ count: Int) -> Auction {
            var auction = whole
            auction.bids = BidList(Array(whole.bids.suffix(count)))
            return auction
        }
        #expect(try house.merge([missed(1)], bidCounts: [id: 3], in: ChangeBatch()) == false, "bob's bid is missing between")
        #expect(try house.merge([missed(2)], bidCounts: [id: 4], in: ChangeBatch()) == false, "the store has a bid more")
        #expect(try house.get(id).bids.map(\.bidder) == ["ann"], "nothing was taken")
        #expect(try house.merge([missed(2)], bidCounts: [id: 3], in: ChangeBatch()))
        #expect(try house.get(id).bids.map(\.bidder) == ["ann", "bob", "cy"])
        #expect(try house.get(id).price == 3)
        #expect(house.liveTimers == 1)
    }

    @Test func aChangeThatCannotBeStoredDoesNotHappen() throws {
        let clock = ManualClock()
        let sink = FailingSink()
        let house = AuctionHouse(clock: clock, sink: sink)
        let id = try house.create(NewAuction(item: "clock", countdownSeconds: 5), in: ChangeBatch()).id
        sink.failing = true
        #expect { try house.bid(on: id, NewBid(bidder: "ann", amount: 1), in: ChangeBatch()) } throws: { ($0 as? DomainError)?.kind == .unavailable }
        #expect(try house.get(id).bids.isEmpty)
        #expect(house.liveTimers == 0)
        let units = UnitStore(sink: sink)
        #expect(throws: DomainError.self) { try units.put(HeraldDomain.Unit(id: "a", name: "A", status: .healthy), in: ChangeBatch()) }
        #expect(units.records().isEmpty)
        // The refused bid left nothing behind in the bids the auction's values share.
        sink.failing = false
        #expect(try house.bid(on: id, NewBid(bidder: "bob", amount: 2), in: ChangeBatch()).bid.number == BidNumber(1))
        #expect(try house.bids(on: id).map(\.bidder) == ["bob"])
    }
}

/// A sink whose store can be made to fail.
final class FailingSink: ChangeSink {
    private let failure = Lock(false)
    var failing: Bool {
        get { failure.withLock { $0 } }
        set { failure.withLock { $0 = newValue } }
    }

    func publish(_ event: DomainEvent, in batch: ChangeBatch) throws(DomainError) {
        if failing { throw DomainError(.unavailable, "disk on fire") }
    }
    func seed(_ states: [DomainState]) {}
    func perform(_ work: @escaping @Sendable (ChangeBatch) -> Void) { work(ChangeBatch()) }
}
