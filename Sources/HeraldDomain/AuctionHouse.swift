public import Foundation
import HeraldThreads
import Synchronization

/// Every auction, its bids and its one countdown timer. Bids and timer firings are changes made one at
/// a time where the sink runs them (`ChangeSink.perform`): each reads its auction under the lock, is
/// stored and published through the sink without it, then stages the auction under it. Memory, and
/// the auction's timer, take the staged auction once its batch is durable.
public final class AuctionHouse: Sendable {
    private struct Entry {
        var auction: Auction
        var timer: (any TimerHandle)?
    }

    /// An auction a change made, until its batch is durable, with the countdown's next step (its
    /// timer then), and whether the change was a firing of its timer (one that a lost batch re-arms).
    private struct StagedAuction {
        var auction: Auction
        var action: Countdown.Action
        var fired: Bool
    }

    private struct State {
        /// What the store holds: what readers see.
        var entries: [AuctionID: Entry] = [:]
        var order: [AuctionID] = []
        var nextId = 1
        var stopped = false
        /// The writer's batch, until it is durable: its auctions, and the next id after those it opened.
        var staged = Staged<AuctionID, StagedAuction>()

        /// The auction as the change being made sees it.
        func current(_ id: AuctionID) -> Auction? {
            if let staged = staged.values[id] { return staged?.auction }
            return entries[id]?.auction
        }
    }

    private let clock: any DomainClock
    private let sink: any ChangeSink
    private let state = Lock(State())

    public init(clock: any DomainClock, sink: any ChangeSink) {
        self.clock = clock
        self.sink = sink
    }

    public static func topic(_ id: AuctionID) -> String { "auctions/\(id)" }
    /// Every auction: the collection.
    public static let collectionTopic = "auctions"

    /// Restores stored auctions: running countdowns continue with the time really left, and one whose
    /// deadline passed while Herald was down closes now, publishing `closed` once.
    public func restore(_ auctions: [Auction], in batch: ChangeBatch) throws(DomainError) {
        try state.withLock { state throws(DomainError) in
            replace(&state, with: auctions)
            try resumeCountdowns(of: state.order, in: &state, batch: batch)
        }
    }

    /// Takes in auctions another Herald changed (a replica catching up): each replaces the one of its
    /// id, or is added; the others stay as they are. Their countdowns go on as after `restore`.
    ///
    /// With `bidCounts`, each auction holds only the bids memory missed, which follow those it holds,
    /// and `bidCounts` says how many each has in all. When they do not add up (memory lacks bids the
    /// store has), nothing is taken and the answer is false: then read everything.
    @discardableResult
    public func merge(_ auctions: [Auction], bidCounts: [AuctionID: Int]? = nil, in batch: ChangeBatch) throws(DomainError) -> Bool {
        try state.withLock { state throws(DomainError) -> Bool in
            var auctions = auctions
            if let bidCounts {
                for index in auctions.indices {
                    let id = auctions[index].id
                    var bids = state.entries[id]?.auction.bids ?? BidList()
                    let missed = auctions[index].bids
                    guard bids.count + missed.count == bidCounts[id],
                          missed.indices.allSatisfy({ missed[$0].number.number == bids.count + 1 + $0 }) else { return false }
                    for bid in missed { bids.append(bid) }
                    auctions[index].bids = bids
                }
            }
            for auction in auctions {
                state.entries[auction.id]?.timer?.cancel()
                if state.entries[auction.id] == nil {
                    let position = state.order.firstIndex { $0 > auction.id } ?? state.order.endIndex
                    state.order.insert(auction.id, at: position)
                }
                state.entries[auction.id] = Entry(auction: auction)
                state.nextId = max(state.nextId, auction.id.number + 1)
            }
            sink.seed(auctions.map { .auction($0) })
            try resumeCountdowns(of: auctions.map(\.id), in: &state, batch: batch)
            return true
        }
    }

    /// Restored or merged auctions: each running countdown goes on with the time really left, and
    /// one whose deadline has passed closes now, publishing `closed` once.
    private func resumeCountdowns(of ids: [AuctionID], in state: inout State, batch: ChangeBatch) throws(DomainError) {
        let now = clock.now
        for id in ids {
            guard var entry = state.entries[id], entry.auction.status == .open, entry.auction.countdown.isRunning else { continue }
            let action = entry.auction.countdown.resume(at: now)
            if action == .expire {
                try close(&entry, at: now, in: batch)
            } else {
                entry.timer = schedule(action, for: id)
            }
            state.entries[id] = entry
        }
    }

    /// Makes `auctions` all there is, in id order, without timers (those there were are cancelled),
    /// and sets each one's current value.
    private func replace(_ state: inout State, with auctions: [Auction]) {
        for entry in state.entries.values { entry.timer?.cancel() }
        state.entries = [:]
        state.order = []
        state.nextId = 1
        for auction in auctions.sorted(by: { $0.id < $1.id }) {
            state.entries[auction.id] = Entry(auction: auction)
            state.order.append(auction.id)
            state.nextId = max(state.nextId, auction.id.number + 1)
        }
        sink.seed(auctions.map { .auction($0) })
    }

    /// Opens an auction, priced in the currency it names, else in `defaultCurrency`.
    public func create(_ request: NewAuction, defaultCurrency: Currency = .dollar, in batch: ChangeBatch) throws(DomainError) -> Auction {
        let number = state.withLock { $0.staged.next ?? $0.nextId }
        let auction = Auction(id: AuctionID(number), item: request.item, countdownSeconds: request.countdownSeconds,
                              startingPrice: request.startingPrice, currency: request.currency ?? defaultCurrency, createdAt: clock.now)
        try sink.publish(.auctionOpened(auction), in: batch)
        stage(auction, action: .ignore, next: number + 1, in: batch)
        return auction
    }

    /// The time auctions are shown at (their seconds left).
    public var now: Date { clock.now }

    /// The auctions in id order whose id is above `after`, only those with `status` if one is given.
    public func auctions(status: Auction.Status? = nil, after: Int = 0) -> [Auction] {
        state.withLock { state in
            state.order.compactMap { id in
                guard id.number > after, let auction = state.entries[id]?.auction,
                      status == nil || auction.status == status else { return nil }
                return auction
            }
        }
    }

    public func get(_ id: AuctionID) throws(DomainError) -> Auction {
        guard let auction = state.withLock({ $0.entries[id]?.auction }) else { throw .notFound("auction", id) }
        return auction
    }

    public func exists(_ id: AuctionID) -> Bool { state.withLock { $0.entries[id] != nil } }

    /// The auction as the change being made sees it (see `UnitStore.latest`); on the writer.
    public func latest(_ id: AuctionID) -> Auction? { state.withLock { $0.current(id) } }

    /// The auction's bids numbered above `after`, in order (a slice: nothing is copied).
    public func bids(on id: AuctionID, after: Int = 0) throws(DomainError) -> Slice<BidList> {
        try state.withLock { state throws(DomainError) in
            guard let bids = state.entries[id]?.auction.bids else { throw .notFound("auction", id) }
            // Bid n is at index n - 1.
            return bids[min(max(after, 0), bids.count)...]
        }
    }

    /// Bid `number` of the auction.
    public func bid(_ number: BidNumber, on id: AuctionID) throws(DomainError) -> Bid {
        try state.withLock { state throws(DomainError) in
            guard let bids = state.entries[id]?.auction.bids else { throw .notFound("auction", id) }
            guard number.number >= 1, number.number <= bids.count else { throw .notFound("bid", number.description) }
            return bids[number.number - 1]
        }
    }

    /// Places a bid and restarts the countdown. Returns the bid and the auction after it.
    public func bid(on id: AuctionID, _ request: NewBid, in batch: ChangeBatch) throws(DomainError) -> (bid: Bid, auction: Auction) {
        guard var auction = state.withLock({ $0.current(id) }) else { throw .notFound("auction", id) }
        let now = clock.now
        let bid = try auction.place(bidder: request.bidder, amount: request.amount, at: now)
        let action = auction.countdown.restart(at: now)
        try sink.publish(.bidPlaced(bid, auction: auction), in: batch)
        stage(auction, action: action, in: batch)
        return (bid, auction)
    }

    /// How many countdown timers are scheduled (at most one per running auction).
    public var liveTimers: Int { state.withLock { $0.entries.values.count { $0.timer != nil } } }

    /// Cancels every timer (at shutdown); countdowns stop where they are, their deadlines kept.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            for id in state.entries.keys {
                state.entries[id]?.timer?.cancel()
                state.entries[id]?.timer = nil
            }
        }
    }

    private func schedule(_ action: Countdown.Action, for id: AuctionID) -> (any TimerHandle)? {
        let (at, generation): (Date, UInt64)
        switch action {
        case .schedule(let date, let gen), .tick(_, let date, let gen): (at, generation) = (date, gen)
        case .expire, .ignore: return nil
        }
        return clock.schedule(at: at) { [weak self] in self?.fireWhereChangesAreMade(id, generation: generation) }
    }

    /// A timer fired: the firing runs where every change runs, in order with them.
    private func fireWhereChangesAreMade(_ id: AuctionID, generation: UInt64) {
        sink.perform { [self] batch in fire(id, generation: generation, in: batch) }
    }

    private func fire(_ id: AuctionID, generation: UInt64, in batch: ChangeBatch) {
        guard var auction = state.withLock({ $0.stopped ? nil : $0.current(id) }) else { return }
        let now = clock.now
        let action = auction.countdown.fire(generation: generation, at: now)
        do {
            switch action {
            case .ignore, .schedule:
                return
            case .tick(let remaining, _, _):
                try sink.publish(.countdownTicked(auction, remainingSeconds: remaining), in: batch)
            case .expire:
                auction = try closed(auction, at: now, in: batch)
            }
            stage(auction, action: action, fired: true, in: batch)
        } catch {
            // Not stored, so not happened: try the same firing again in a second.
            state.withLock { state in
                guard !state.stopped else { return }
                state.entries[id]?.timer = retry(id, generation: generation, at: now)
            }
        }
    }

    /// A timer that fires for `generation` again a second after `now`.
    private func retry(_ id: AuctionID, generation: UInt64, at now: Date) -> any TimerHandle {
        clock.schedule(at: now.addingTimeInterval(1)) { [weak self] in self?.fireWhereChangesAreMade(id, generation: generation) }
    }

    /// Stages an auction a change made (and the next id, when it is new); the batch's first asks to
    /// hear when the batch ends.
    private func stage(_ auction: Auction, action: Countdown.Action, fired: Bool = false, next: Int? = nil, in batch: ChangeBatch) {
        let first = state.withLock { state in
            let firedBefore = state.staged.values[auction.id]??.fired ?? false
            return state.staged.stage(StagedAuction(auction: auction, action: action, fired: fired || firedBefore), for: auction.id, next: next)
        }
        if first { sink.whenBatchEnds(in: batch) { [weak self] durable in self?.batchEnded(durable: durable) } }
    }

    /// Once the batch is durable, memory takes its auctions and each one's timer its next step (a new
    /// auction joins the order). A lost batch leaves memory as it was; a firing in it fires again in a
    /// second, since its timer is spent.
    private func batchEnded(durable: Bool) {
        state.withLock { state in
            let staged = state.staged.take()
            let now = clock.now
            for case (let id, let change?) in staged.values {
                if !durable {
                    guard change.fired, !state.stopped, let committed = state.entries[id]?.auction else { continue }
                    state.entries[id]?.timer?.cancel()
                    state.entries[id]?.timer = retry(id, generation: committed.countdown.generation, at: now)
                    continue
                }
                if state.entries[id] == nil { state.order.append(id) }
                state.entries[id]?.timer?.cancel()
                state.entries[id] = Entry(auction: change.auction, timer: state.stopped ? nil : schedule(change.action, for: id))
            }
            if durable { state.nextId = max(state.nextId, staged.next ?? 0) }
        }
    }

    /// Closes the auction in `entry`: the last bidder wins.
    private func close(_ entry: inout Entry, at now: Date, in batch: ChangeBatch) throws(DomainError) {
        entry.auction = try closed(entry.auction, at: now, in: batch)
        entry.timer = nil
    }

    /// `auction` closed at `now`, stored and published.
    private func closed(_ auction: Auction, at now: Date, in batch: ChangeBatch) throws(DomainError) -> Auction {
        var closed = auction
        closed.close(at: now)
        try sink.publish(.auctionClosed(closed), in: batch)
        return closed
    }
}
