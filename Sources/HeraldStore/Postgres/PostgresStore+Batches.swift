import Foundation
import CLinux
import HeraldThreads
import Synchronization

// Batches: one transaction under the database's write lock, its changes pipelined, committed with its news.
extension PostgresStore {
    /// The batch let the write lock go (it committed, or was abandoned): tells how long it held it.
    func lockReleased(_ state: inout State) {
        guard let lock = state.lock else { return }
        state.lock = nil
        lockTimes?(.nanoseconds(lock.waited), .nanoseconds(Self.nanoseconds() - lock.since))
    }

    /// Opens the batch's transaction, waits for the database's write lock, and returns the sequence
    /// committed (by any replica) so far: one round trip. When the listener heard of a commit this
    /// store has not seen, or of another replica's within the last second, the same round trip reads
    /// what was missed (the events, and the records,
    /// removals, auctions and bids changed), for `events(after:)` and `missedChanges()`. The batch's
    /// changes are then pipelined (sent without waiting for their answers), and its commit waits once
    /// for all of them.
    @discardableResult
    public func beginBatch(news: NewsTaker?) throws(StoreError) -> BatchStart? {
        try use { state throws(StoreError) -> BatchStart? in
            let connection = state.connection
            let takesNews = news != nil
            takeInNews(&state, news)
            try connection.enterPipeline()
            let asked = Self.nanoseconds()
            do throws(StoreError) {
                try connection.send("BEGIN")
                try connection.send("SELECT pg_advisory_xact_lock($1)", [.int(Self.lockKey)])
                try connection.send("SELECT value, revision FROM herald_sequence")
                // The events after this sequence, and what changed since the revision seen, when read now.
                var prefetching: UInt64?
                let othersWriting = Self.milliseconds() - othersHeard.load(ordering: .relaxed) < Self.othersWriting
                // With news, what was missed is taken from it; read only when the news is known lost.
                let newsLost = takesNews && heardNews.withLock({ $0.missedBefore }) > state.seenRevision
                if let sequence = state.seenSequence, state.seenRevision >= 0, !takesNews || newsLost,
                   othersWriting || heardRevision.load(ordering: .relaxed) > state.seenRevision {
                    prefetching = sequence
                    let events = Self.eventsRead(after: sequence)
                    try connection.send(events.sql, events.parameters)
                    for statement in Self.missedReads(Missed(after: state.seenRevision, through: nil)) {
                        try connection.send(statement.sql, statement.parameters)
                    }
                }
                // At most once a second, how full PostgreSQL's notification queue is (read last).
                let readingQueue = Self.milliseconds() - queueRead.load(ordering: .relaxed) >= 1_000
                if readingQueue {
                    queueRead.store(Self.milliseconds(), ordering: .relaxed)
                    try connection.send("SELECT pg_notification_queue_usage()")
                }
                // While it waits for the lock, news of the commits before it is taken in as it comes.
                let answers = try connection.flush(wake: newsWake) { takeInNews(&state, news) }
                let granted = Self.nanoseconds()
                state.lock = (granted - asked, granted)
                if readingQueue, let usage = answers.last?.rows.first?[0].flatMap({ Double($0) }) {
                    carryNews.store(usage <= newsQueueLimit, ordering: .relaxed)
                }
                let row = answers[2].rows.first
                let committed = UInt64(row?[0] ?? "") ?? 0
                let revision = Int64(row?[1] ?? "") ?? 0
                if revision > state.seenRevision, let news, prefetching == nil { awaitNews(through: revision, &state, news) }
                let behind = revision != state.seenRevision
                state.missedSince = behind ? state.seenRevision : -1
                state.prefetched = nil
                if prefetching != nil { prefetches.add(1, ordering: .relaxed) }
                if behind, let prefetching {
                    // Read from the revision seen when it was sent: what was taken in meanwhile is left out.
                    let (sequence, revision) = (state.seenSequence ?? 0, state.seenRevision)
                    state.prefetched = (prefetching, answers[3].rows.map(Self.event).filter { $0.id > sequence },
                                        Self.changes(Array(answers[4...]), after: revision))
                }
                state.seenRevision = revision
                state.seenSequence = committed
                state.inBatch = true
                state.batchSequence = nil
                state.batchWrote = false
                state.news.reset()
                return BatchStart(committed: committed, behind: behind)
            } catch {
                Self.abandon(connection)
                lockReleased(&state)
                throw error
            }
        }
    }

    /// Commits the batch: the sequence row and the notification after its changes, then `COMMIT`, and
    /// one wait for the answers to all of it. If any of its statements failed, none of it is stored.
    public func commitBatch() throws(StoreError) {
        try use { state throws(StoreError) in
            guard state.inBatch else { return }
            let connection = state.connection
            defer {
                state.inBatch = false
                state.batchSequence = nil
                state.batchWrote = false
                lockReleased(&state)
            }
            do throws(StoreError) {
                if let failure = connection.takeFailure() { throw failure }
                // The write lock is held since the batch began, so the revision it commits is the next.
                let revision = state.batchWrote ? state.seenRevision + 1 : state.seenRevision
                if state.batchWrote {
                    committing.store(revision, ordering: .relaxed)
                    let payloads = carriesNews ? state.news.payloads(revision: revision) : [String(revision)]
                    try connection.send(Self.advance(to: state.batchSequence, revision: revision,
                                                     notifying: payloads.map { state.seal.sealNews($0, channel: Self.channel) }))
                }
                try connection.send("COMMIT")
                try connection.flush()
                connection.exitPipeline()
                state.seenRevision = revision
                if let sequence = state.batchSequence { state.seenSequence = sequence }
                state.prefetched = nil
            } catch {
                Self.abandon(connection)
                // A COMMIT whose answer was lost may have committed: the next batch reads what is there.
                state.seenRevision = -1
                state.seenSequence = nil
                state.prefetched = nil
                committing.store(-1, ordering: .relaxed)
                wakeAfterFailure.withLock { $0 }?.run()
                throw error
            }
        }
    }

    public func rollbackBatch() {
        connection.withLock { state in
            guard state.inBatch else { return }
            Self.abandon(state.connection)
            lockReleased(&state)
            state.inBatch = false
            state.batchSequence = nil
            state.prefetched = nil
            // Memory may not have taken in what this batch found: the next one reads everything.
            state.seenRevision = -1
            state.seenSequence = nil
        }
    }

    /// Rolls back the batch's transaction, if the connection is up, and leaves pipeline mode.
    static func abandon(_ connection: PostgresConnection) {
        if connection.isConnected { _ = try? connection.query("ROLLBACK") }
        connection.exitPipeline()
    }

    public func commit(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?) throws(StoreError) {
        try use { state throws(StoreError) in
            if state.inBatch { state.news.add(event: event, records: records, auction: auction, bid: bid) }
            try Self.change(&state, event: event?.id) { revision in
                Self.statements(event: event, records: records, auction: auction, bid: bid, revision: revision)
            }
        }
    }

    /// Stores one change, whose statements `statements` makes for the revision their transaction
    /// commits (the rows they write carry it; the write lock is held, so no other replica takes it
    /// meanwhile). In a batch, they are queued in the batch's pipeline, all or (when one cannot be sent)
    /// none, and answered when the batch commits: a change that fails there fails its whole batch.
    /// Outside a batch, the change is a transaction of its own that takes the write lock and moves the
    /// sequence and revision; if it fails, what it wrote is undone.
    static func change(_ state: inout State, event: UInt64?, _ statements: (Int64) -> [Statement]) throws(StoreError) {
        let connection = state.connection
        if state.inBatch {
            try connection.send(statements(state.seenRevision + 1))
            state.batchWrote = true
            if let event { state.batchSequence = event }
            return
        }
        try connection.execute("BEGIN")
        do throws(StoreError) {
            try connection.query("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
            let committing = (Int64(try connection.text("SELECT revision FROM herald_sequence") ?? "") ?? 0) + 1
            let notified = state.seal.sealNews(String(committing), channel: channel)
            for statement in statements(committing) + advance(to: event, revision: committing, notifying: [notified]) {
                try connection.query(statement.sql, statement.parameters)
            }
            try connection.execute("COMMIT")
            // Only when nothing came between: otherwise the next batch must still read what others
            // committed before this change (it then reads this one too, harmlessly).
            if state.seenRevision == committing - 1 {
                state.seenRevision = committing
                if let event { state.seenSequence = event }
            }
        } catch {
            // A COMMIT whose answer was lost may have committed: read what is there next.
            state.seenRevision = -1
            state.seenSequence = nil
            if connection.isConnected { try? connection.execute("ROLLBACK") }
            throw error
        }
    }
}
