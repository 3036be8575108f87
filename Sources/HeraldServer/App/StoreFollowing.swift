import HeraldStore
import Logging

extension Subjects {
    /// Makes memory follow the store. A batch the store could not commit never happened: memory goes
    /// back to what the store holds. With replicas, memory takes in what the others committed before
    /// each batch that finds the store moved (the listener wakes the writer when one commits).
    func follow(_ store: any Store, journal: Journal, logger: Logger) {
        // Weak: the journal keeps these closures, and the subjects keep the journal (their sink).
        let reload: @Sendable (Bool) -> Bool = { [weak auctions, weak currency, weak trips, weak units] catchingUp in
            guard let auctions, let currency, let trips, let units else { return true }
            let subjects = Subjects(auctions: auctions, currency: currency, trips: trips, units: units)
            do {
                // Catching up: only what the others changed, when the store can tell.
                if catchingUp, let changes = try store.missedChanges() {
                    try subjects.merge(changes)
                    return true
                }
                let stored = try DomainSnapshot(try store.load(eventLimit: 0))
                // Catching up, countdowns go on as at start; after a lost batch each fires once now.
                if catchingUp {
                    try subjects.restore(stored)
                } else {
                    subjects.reload(stored)
                    logger.warning("memory reloaded from the store after a lost batch")
                }
                return true
            } catch {
                // Tried again before each batch; changes are refused until then.
                logger.error("memory could not be reloaded from the store", metadata: ["error": "\(error)", "store.catching_up": "\(catchingUp)"])
                return false
            }
        }
        journal.onLostBatch { reload(false) }
        if store.isShared { journal.onCatchUp { reload(true) } }
    }
}
