import HeraldThreads
import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON
import HeraldStore
import Logging
import Synchronization

// What other replicas committed, taken in: from their news between batches, or under the store's lock.
extension Journal {
    /// What takes in other replicas' news on the writer (`takeIn`), once memory follows the store
    /// (`start(following:)`); nil before, when a batch reads what it missed instead.
    func newsTaker(in batch: ChangeBatch) -> NewsTaker? {
        guard let merge = state.withValue({ $0.follower?.merge }) else { return nil }
        return { [weak self] events, changes in self?.takeIn(events, changes, in: batch, merge: merge) ?? .declined }
    }

    /// Takes in, on the writer between batches or while a batch begins (before it asks for the
    /// store's lock, and while it waits for it), what other Heralds committed, from their news
    /// (`newsTaker`): memory merges their changes and their events are published with their ids, as a
    /// batch that caught up under the lock would. Declined, and left to be read under the lock, when
    /// an auction in it would close on the spot (its countdown ran out meanwhile): its `closed` event
    /// takes the next id, which only a batch that holds the lock may give.
    func takeIn(_ events: [StoredEvent], _ changes: StoredChanges, in batch: ChangeBatch,
                merge: @Sendable (StoredChanges, ChangeBatch) -> Bool) -> NewsTaken {
        let closing = clock.now.addingTimeInterval(1)
        for auction in changes.changed.auctions where auction.status == Auction.Status.open.rawValue {
            if let deadline = auction.deadline.flatMap(Timestamp.parse), deadline <= closing { return .declined }
        }
        guard state.withValue({ $0.preparing }) else { return .declined }
        let taken = visibility.write { () -> Bool in
            guard merge(changes, batch) else { return false }
            let last = state.withValue { $0.sequence }
            for event in events where event.id > last {
                apply(.event(id: event.id, durable: true, topic: event.topic, name: EventName(event.name), tags: event.tags,
                             updates: [], data: event.data))
            }
            return true
        }
        guard taken else { return .failed }
        if let last = events.last?.id { state.withValue { $0.sequence = max($0.sequence, last) } }
        return .taken
    }

    /// Catches up with what other Heralds committed (the store's listener heard of a commit): from
    /// their news, on the writer between two batches and without the store's lock; or, when some of it
    /// has no news, with a batch that only catches up. Until the queued work runs, another wake is not
    /// queued, only remembered: the catch-up batch may read before that commit, so its end wakes again.
    /// A batch refused before it ran (the store unreachable) caught up with nothing, so the next commit
    /// heard wakes again.
    func wake() {
        guard !wakeQueued.exchange(true, ordering: .relaxed) else {
            wokenMeanwhile.store(true, ordering: .releasing)
            return
        }
        writer.between { [weak self] batch in self?.takeInBetweenBatches(batch) }
    }

    func takeInBetweenBatches(_ batch: ChangeBatch) {
        // Everything heard until now is taken in here, or by the batch this queues.
        wokenMeanwhile.store(false, ordering: .relaxed)
        wakeQueued.store(false, ordering: .relaxed)
        guard let store, let newsTaker = newsTaker(in: batch) else { return }
        state.withValue { $0.preparing = true }
        let caughtUp = store.takeInNews(newsTaker)
        state.withValue { $0.preparing = false }
        guard !caughtUp, !wakeQueued.exchange(true, ordering: .relaxed) else { return }
        // A batch that takes the lock reads what has no news (it begins caught up with all the rest).
        writer.submit({ [weak self] _ throws(DomainError) in self?.wakeQueued.store(false, ordering: .relaxed) }, done: { [weak self] result in
            guard let self else { return }
            if case .failure = result { wakeQueued.store(false, ordering: .relaxed) }
            // A commit heard while the batch waited or read (its wake-up queued nothing) may be one it
            // did not read: heard news is taken in, what has none another batch reads. A batch that
            // failed wakes again only so, once for each wake-up: not in a loop while the store is down.
            if wokenMeanwhile.exchange(false, ordering: .acquiring) { wake() }
        })
    }
}
