import HeraldDomain
import HeraldStore

/// The four subjects whose changes Herald publishes, made together on one sink (the journal), and put
/// back together from what the store holds.
struct Subjects: Sendable {
    let auctions: AuctionHouse
    let currency: CurrencySetting
    let trips: TripBoard
    let units: UnitStore

    init(clock: any DomainClock, sink: any ChangeSink) {
        self.init(auctions: AuctionHouse(clock: clock, sink: sink), currency: CurrencySetting(sink: sink),
                  trips: TripBoard(sink: sink), units: UnitStore(sink: sink))
    }

    init(auctions: AuctionHouse, currency: CurrencySetting, trips: TripBoard, units: UnitStore) {
        (self.auctions, self.currency, self.trips, self.units) = (auctions, currency, trips, units)
    }

    /// Everything as the store holds it. On the writer, like every change: an auction whose deadline
    /// passed meanwhile closes now, and the other countdowns go on.
    func restore(_ snapshot: DomainSnapshot) throws(DomainError) {
        currency.restore(snapshot.currency)
        trips.restore(snapshot.trips)
        units.restore(snapshot.units)
        try auctions.restore(snapshot.auctions)
    }

    /// What other replicas changed and removed, taken in (one timer per auction still). False when an
    /// auction's bids do not add up with those memory holds: then restore everything.
    func merge(_ changes: StoredChanges) throws -> Bool {
        let changed = try DomainSnapshot(changes.changed)
        if let value = changed.currency { currency.restore(value) }
        trips.merge(changed.trips)
        units.merge(changed.units, removed: changes.removed.filter { $0.kind == Journal.RecordKind.unit }.map(\.id))
        return try auctions.merge(changed.auctions, bidCounts: changed.bidCounts)
    }
}
