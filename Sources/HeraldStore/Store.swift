import Foundation

/// What Herald keeps its state in: the embedded SQLite file (`SQLiteStore`) or a PostgreSQL database
/// (`PostgresStore`). One Herald owns its store; the journal uses it from the writer's thread.
///
/// A change is one call to `commit`; the changes between `beginBatch` and `commitBatch` share one
/// transaction (group commit), each of them undone alone if it fails.
public protocol Store: AnyObject, Sendable {
    /// How hard a commit insists on the disk.
    var synchronous: Synchronous { get }
    /// Where the store is, for the log: a file's path, or a database's host, port and name (never a
    /// password).
    var location: String { get }
    func beginBatch() throws(StoreError)
    func commitBatch() throws(StoreError)
    /// Makes every commit so far durable (called once per batch with `synchronous == .full`).
    func syncLog() throws(StoreError)
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
    /// Why the store cannot be written now, if it knows (readiness); nil when it can.
    func unwritableReason() -> String?
    /// The bytes the store takes, if it knows (metrics).
    func sizeBytes() -> Int64?
}
