import HeraldDomain
import HeraldStore

/// The subjects whose changes Herald publishes, made together on one sink (the journal), and put
/// back together from what the store holds: the auctions, the currency, the trips, and each keyed
/// kind of `Registry.keyed` (the units), by collection.
struct Subjects: Sendable {
    let auctions: AuctionHouse
    let currency: CurrencySetting
    let trips: TripBoard
    let keyed: [String: any KeyedSubject]

    init(clock: any DomainClock, sink: any ChangeSink) {
        self.init(auctions: AuctionHouse(clock: clock, sink: sink), currency: CurrencySetting(sink: sink), trips: TripBoard(sink: sink),
                  keyed: Dictionary(uniqueKeysWithValues: Registry.keyed.map { ($0.collection, $0.makeStore(sink: sink)) }))
    }

    init(auctions: AuctionHouse, currency: CurrencySetting, trips: TripBoard, keyed: [String: any KeyedSubject]) {
        (self.auctions, self.currency, self.trips, self.keyed) = (auctions, currency, trips, keyed)
    }

    /// The store of a keyed kind (every kind in `Registry.keyed` has one).
    func store<Kind: KeyedKind>(_ kind: Kind.Type) -> KeyedStore<Kind.Record>? {
        keyed[kind.collection] as? KeyedStore<Kind.Record>
    }

    /// Everything as the store holds it. On the writer, like every change: an auction whose deadline
    /// passed meanwhile closes now, and the other countdowns go on.
    func restore(_ snapshot: DomainSnapshot, in batch: ChangeBatch) throws(DomainError) {
        currency.restore(snapshot.currency)
        trips.restore(snapshot.trips)
        for (collection, store) in keyed { store.restore(snapshot.records[collection] ?? []) }
        try auctions.restore(snapshot.auctions, in: batch)
    }

    /// What other replicas changed and removed, taken in (one timer per auction still). False when an
    /// auction's bids do not add up with those memory holds: then restore everything.
    func merge(_ changes: StoredChanges, in batch: ChangeBatch) throws -> Bool {
        let changed = try DomainSnapshot(changes.changed)
        if let value = changed.currency { currency.restore(value) }
        trips.merge(changed.trips)
        for (collection, store) in keyed {
            guard let noun = Registry.keyedKind(collection)?.noun else { continue }
            store.merge(changed.records[collection] ?? [], removed: changes.removed.filter { $0.kind == noun }.map(\.id))
        }
        return try auctions.merge(changed.auctions, bidCounts: changed.bidCounts, in: batch)
    }
}
