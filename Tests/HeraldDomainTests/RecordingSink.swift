import HeraldThreads
import Foundation
import HeraldDomain
import Synchronization

/// Keeps every event the domain publishes and every state it seeds, in order.
final class RecordingSink: ChangeSink {
    private let recorded = Lock<[DomainEvent]>([])
    private let seededStates = Lock<[DomainState]>([])

    func publish(_ event: DomainEvent, in batch: ChangeBatch) { recorded.withLock { $0.append(event) } }

    func seed(_ states: [DomainState]) { seededStates.withLock { $0 += states } }

    func perform(_ work: @escaping @Sendable (ChangeBatch) -> Void) { work(ChangeBatch()) }

    var all: [DomainEvent] { recorded.withLock { $0 } }
    var seeded: [DomainState] { seededStates.withLock { $0 } }
    /// The events observers are told of (those with a name on the wire).
    var events: [DomainEvent] { all.filter { $0.name != nil } }
    var names: [String?] { all.map(\.name) }
    func named(_ name: String) -> [DomainEvent] { all.filter { $0.name == name } }
    /// The seconds left of every tick, in order.
    var ticks: [Int] { all.compactMap { if case .countdownTicked(_, let remaining) = $0 { remaining } else { nil } } }
    /// The winner of every close, in order.
    var winners: [String?] { all.compactMap { if case .auctionClosed(let auction) = $0 { .some(auction.winner) } else { nil } } }

    /// The newest value of each auction the events carried, in id order: what a store would hold.
    var auctions: [Auction] {
        var latest: [AuctionID: Auction] = [:]
        for event in all { if let auction = event.auction { latest[auction.id] = auction } }
        return latest.keys.sorted().compactMap { latest[$0] }
    }
}

extension DomainEvent {
    /// The event's name on the wire (Herald's journal).
    var name: String? {
        switch self {
        case .auctionOpened: "auction"
        case .tripAdded: "trip"
        case .bidPlaced: "bid"
        case .countdownTicked: "tick"
        case .auctionClosed: "closed"
        case .recordSaved(let record, _): type(of: record).noun
        case .recordRemoved: "removed"
        case .currencyChanged: "currency"
        case .tripMoved: "trip"
        }
    }

    var auction: Auction? {
        switch self {
        case .auctionOpened(let auction), .bidPlaced(_, let auction), .auctionClosed(let auction): auction
        default: nil
        }
    }
}

/// What a reader sees of an auction at `now`, for comparing two of them.
func view(_ auction: Auction, at now: Date) -> String {
    "\(auction.id) \(auction.item) \(auction.status) \(auction.price) \(auction.leader ?? "-") \(auction.bids.count) "
        + "\(auction.countdown.remaining(at: now).map(String.init) ?? "-") \(auction.winner ?? "-")"
}
