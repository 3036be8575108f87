import Foundation
import HeraldJSON
import Synchronization

/// Every auction, its bids and its one countdown timer. Bids and timer firings change state under
/// one lock, and each change is reported to the sink before the lock is released.
public final class AuctionHouse: Sendable {
    private struct Entry {
        var auction: Auction
        var timer: (any TimerHandle)?
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var nextId = 1
        var stopped = false
    }

    private let clock: any DomainClock
    private let sink: any ChangeSink
    private let state = Mutex(State())

    public init(clock: any DomainClock, sink: any ChangeSink) {
        self.clock = clock
        self.sink = sink
    }

    public static func topic(_ id: String) -> String { "auctions/\(id)" }

    public func create(_ request: NewAuction) -> JSONValue {
        state.withLock { state in
            let id = String(state.nextId)
            state.nextId += 1
            let now = clock.now
            let auction = Auction(id: id, item: request.item, countdownSeconds: request.countdownSeconds,
                                  startingPrice: request.startingPrice, createdAt: now)
            state.entries[id] = Entry(auction: auction)
            state.order.append(id)
            let json = auction.json(at: now)
            sink.seed([(Self.topic(id), ["auction": json])])
            return json
        }
    }

    public func list() -> [JSONValue] {
        state.withLock { state in
            let now = clock.now
            return state.order.compactMap { state.entries[$0]?.auction.json(at: now) }
        }
    }

    public func get(_ id: String) throws(DomainError) -> JSONValue {
        try state.withLock { state throws(DomainError) in
            guard let entry = state.entries[id] else { throw .notFound("auction", id) }
            return entry.auction.json(at: clock.now)
        }
    }

    public func exists(_ id: String) -> Bool { state.withLock { $0.entries[id] != nil } }

    public func bids(_ id: String) throws(DomainError) -> [JSONValue] {
        try state.withLock { state throws(DomainError) in
            guard let entry = state.entries[id] else { throw .notFound("auction", id) }
            return entry.auction.bids.map(\.json)
        }
    }

    /// Places a bid and restarts the countdown. Returns the bid and the auction after it.
    public func bid(on id: String, _ request: NewBid) throws(DomainError) -> (bid: JSONValue, auction: JSONValue) {
        try state.withLock { state throws(DomainError) in
            guard var entry = state.entries[id] else { throw .notFound("auction", id) }
            let now = clock.now
            let bid = try entry.auction.place(bidder: request.bidder, amount: request.amount, at: now)
            let action = entry.auction.countdown.restart(at: now)
            entry.timer?.cancel()
            entry.timer = state.stopped ? nil : schedule(action, for: id)
            state.entries[id] = entry
            let auction = entry.auction.json(at: now)
            sink.publish(Change(topic: Self.topic(id), event: "bid", payload: ["bid": bid.json, "auction": auction],
                                values: [(Self.topic(id), ["auction": auction])]))
            return (bid.json, auction)
        }
    }

    /// How many countdown timers are scheduled (at most one per running auction).
    public var liveTimers: Int { state.withLock { $0.entries.values.count { $0.timer != nil } } }

    /// Cancels every timer (at shutdown); countdowns stop where they are.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            for id in state.entries.keys {
                state.entries[id]?.timer?.cancel()
                state.entries[id]?.timer = nil
            }
        }
    }

    private func schedule(_ action: Countdown.Action, for id: String) -> (any TimerHandle)? {
        let (at, generation): (Date, UInt64)
        switch action {
        case .schedule(let date, let gen), .tick(_, let date, let gen): (at, generation) = (date, gen)
        case .expire, .ignore: return nil
        }
        return clock.schedule(at: at) { [weak self] in self?.fire(id, generation: generation) }
    }

    private func fire(_ id: String, generation: UInt64) {
        state.withLock { state in
            guard !state.stopped, var entry = state.entries[id] else { return }
            let now = clock.now
            let action = entry.auction.countdown.fire(generation: generation, at: now)
            switch action {
            case .ignore:
                return
            case .tick(let remaining, _, _):
                entry.timer = schedule(action, for: id)
                state.entries[id] = entry
                let auction = entry.auction.json(at: now)
                sink.publish(Change(topic: Self.topic(id), event: "tick",
                                    payload: ["auctionId": .string(id), "remainingSeconds": .integer(remaining), "price": .int(entry.auction.price), "leader": .optional(entry.auction.leader)],
                                    values: [(Self.topic(id), ["auction": auction])]))
            case .expire:
                entry.timer = nil
                entry.auction.close(at: now)
                state.entries[id] = entry
                let auction = entry.auction.json(at: now)
                sink.publish(Change(topic: Self.topic(id), event: "closed",
                                    payload: ["auction": auction, "winner": .optional(entry.auction.winner)],
                                    values: [(Self.topic(id), ["auction": auction])]))
            case .schedule:
                return
            }
        }
    }
}
