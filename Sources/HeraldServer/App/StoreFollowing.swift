import HeraldDomain
import HeraldStore
import Logging

extension Subjects {
    /// What makes memory follow a shared store (nil for one no one shares), given to the journal's
    /// start: memory takes in what the other replicas committed before each batch that finds the store
    /// moved (the listener wakes the writer when one commits). A batch the store could not commit needs
    /// nothing here: memory takes a batch only once it is durable.
    func follower(of store: any Store, logger: Logger) -> Journal.Follower? {
        guard store.isShared else { return nil }
        // Weak: the journal's writer keeps these closures, and the subjects keep the journal (their sink).
        let weakly = WeakSubjects(self)
        let catchUp = { @Sendable (batch: ChangeBatch) -> Bool in
            guard let subjects = weakly.subjects else { return true }
            do {
                // Only what the others changed, when the store can tell and the bids add up; else
                // all of it, with the countdowns going on as at start.
                if let changes = try store.missedChanges(), try subjects.merge(changes, in: batch) {
                    return true
                }
                try subjects.restore(try DomainSnapshot(try store.load(eventLimit: 0)), in: batch)
                return true
            } catch {
                // Tried again before each batch; changes are refused until then.
                logger.error("memory could not catch up with the store", metadata: ["error": "\(error)"])
                return false
            }
        }
        // What the other replicas' news carries, merged while a batch begins or waits for the lock (the
        // bids must add up, and no auction may close in it: else it is read back under the lock).
        let merge = { @Sendable (changes: StoredChanges, batch: ChangeBatch) -> Bool in
            guard let subjects = weakly.subjects else { return false }
            do {
                return try subjects.merge(changes, in: batch)
            } catch {
                logger.error("memory could not take in another replica's news", metadata: ["error": "\(error)"])
                return false
            }
        }
        return Journal.Follower(catchUp: catchUp, merge: merge)
    }
}

/// The subjects, held weakly: `subjects` is nil once any of them is gone.
private struct WeakSubjects: Sendable {
    weak var auctions: AuctionHouse?
    weak var currency: CurrencySetting?
    weak var trips: TripBoard?
    let keyed: [String: WeakKeyed]

    struct WeakKeyed: Sendable { weak var store: (any KeyedSubject)? }

    init(_ subjects: Subjects) {
        (auctions, currency, trips) = (subjects.auctions, subjects.currency, subjects.trips)
        keyed = subjects.keyed.mapValues { WeakKeyed(store: $0) }
    }

    var subjects: Subjects? {
        guard let auctions, let currency, let trips else { return nil }
        let stores = keyed.compactMapValues(\.store)
        guard stores.count == keyed.count else { return nil }
        return Subjects(auctions: auctions, currency: currency, trips: trips, keyed: stores)
    }
}
