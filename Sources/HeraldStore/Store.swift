public import Foundation

/// What Herald keeps its state in: the embedded SQLite file (`SQLiteStore`) or a PostgreSQL database
/// (`PostgresStore`). One Herald owns its store; the journal uses it from the writer's thread.
///
/// A change is one call to `commit`; the changes between `beginBatch` and `commitBatch` share one
/// transaction (group commit). A change `commit` refuses is undone alone; one that fails only at
/// `commitBatch` (PostgreSQL's pipelined changes) fails the whole batch.
public protocol Store: AnyObject, Sendable {
    /// How hard a commit insists on the disk.
    var synchronous: Synchronous { get }
    /// Whether other Heralds may write the store too (replicas on one PostgreSQL database).
    var isShared: Bool { get }
    /// Where the store is, for the log: a file's path, or a database's host, port and name (never a
    /// password).
    var location: String { get }
    /// Opens a batch. For a shared store (the batch then holds the store's write lock until it ends),
    /// returns what other Heralds committed since this one last looked; nil when only this Herald
    /// writes the store. A shared store whose replicas send news gives what it heard meanwhile to
    /// `news` (memory follows the store), or reads it back when there is none.
    @discardableResult
    func beginBatch(news: NewsTaker?) throws(StoreError) -> BatchStart?
    func commitBatch() throws(StoreError)
    /// Ends the batch opened by `beginBatch()` without storing any of it.
    func rollbackBatch()
    /// Makes every commit so far durable (called once per batch with `synchronous == .full`).
    func syncLog() throws(StoreError)
    /// After a batch's clients are answered: upkeep that must not keep them waiting (SQLite's checkpoint).
    func tidy()
    /// Everything needed at start: the sequence, the newest `eventLimit` events and every record.
    func load(eventLimit: Int) throws(StoreError) -> StoredState
    /// Stores one change: its event (advancing the sequence to its id), its records, and an auction's
    /// fields with the bid it added.
    func commit(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?) throws(StoreError)
    /// Deletes events beyond the newest `keep` and those older than `before`; returns the first id
    /// that can still be replayed.
    func prune(keep: Int, before: Date?) throws(StoreError) -> UInt64
    /// How many events the store holds.
    func eventCount() throws(StoreError) -> Int
    /// Keeps the answer to a change made with an `Idempotency-Key`, in the change's batch.
    func keep(_ answer: KeptAnswer) throws(StoreError)
    /// Keeps a revocation, in the current batch (in place of the one of the same key).
    func revoke(_ revocation: StoredRevocation) throws(StoreError)
    /// The revocations kept that have not run out by `now` (`prune` forgets the others).
    func revocations(at now: Double) throws(StoreError) -> [StoredRevocation]
    /// The answer kept for `key`, if any (kept answers older than a day are pruned).
    func keptAnswer(for key: String) throws(StoreError) -> KeptAnswer?
    /// The events after `id`, oldest first (what other Heralds committed, for a shared store).
    func events(after id: UInt64) throws(StoreError) -> [StoredEvent]
    /// In a batch of a shared store that began behind: the records, removals and auctions other
    /// Heralds changed since this one last looked. Nil when it cannot tell (then `load` reads all).
    /// A record may be both removed and changed (removed, then made again): apply removals first.
    func missedChanges() throws(StoreError) -> StoredChanges?
    /// Outside a batch, on the writer: gives `news` the news heard so far (a shared store whose
    /// replicas tell each other what they commit). Whether memory now holds everything the store
    /// heard of; false when some of it must be read, with the lock.
    func takeInNews(_ news: @escaping NewsTaker) -> Bool
    /// Why the store cannot be written now, if it knows (readiness); nil when it can.
    func unwritableReason() -> String?
    /// The bytes the store takes, if it knows (metrics).
    func sizeBytes() -> Int64?
}

extension Store {
    /// Only a shared store has other Heralds' changes to tell.
    public func missedChanges() throws(StoreError) -> StoredChanges? { nil }
    public func takeInNews(_ news: @escaping NewsTaker) -> Bool { false }
    /// A batch whose memory does not follow other replicas' news (tests, and a store no one shares).
    @discardableResult
    public func beginBatch() throws(StoreError) -> BatchStart? { try beginBatch(news: nil) }
    public func tidy() {}
}

/// Takes in, on the writer, the events and changes of revisions other Heralds committed, outside any
/// batch's lock (`Store.beginBatch(news:)`, `Store.takeInNews`).
/// Called only on the writer, within the call it is given to (so it may hold the writer's batch).
public typealias NewsTaker = (_ events: [StoredEvent], _ changes: StoredChanges) -> NewsTaken

/// What became of news another replica committed (a `NewsTaker`'s answer).
public enum NewsTaken: Sendable {
    /// Memory took it in, and its events are published.
    case taken
    /// Memory did not touch it: a batch reads it back under the lock.
    case declined
    /// Memory took a part of it: it must be restored from the store.
    case failed
}

/// What a batch of a shared store finds when it begins.
public struct BatchStart: Sendable, Equatable {
    /// The last sequence number committed, by any Herald.
    public let committed: UInt64
    /// Whether another Herald committed anything since this one last read or wrote the store (a
    /// change without an event, such as a new auction, too).
    public let behind: Bool

    public init(committed: UInt64, behind: Bool) {
        self.committed = committed
        self.behind = behind
    }
}
