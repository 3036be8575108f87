public import Foundation
import HeraldJSON
import HeraldThreads
import Synchronization

/// Herald's state in a PostgreSQL database (`--store postgres://…`): the same records, auctions, bids
/// and event log as `SQLiteStore`, in tables named `herald_…`, so the database may hold others.
///
/// Several Heralds (replicas) may share a database. A batch is one transaction that first takes the
/// database's write lock (a transaction advisory lock), so batches of all replicas run one at a time;
/// it reads the committed sequence, so its Herald can first catch up with what the others committed.
/// Each change is a savepoint of the batch's transaction; the sequence row is written last, with a
/// `pg_notify('herald', id)` that every replica's listener gets at commit. So the ids are gapless, in
/// commit order, and the same on every replica. PostgreSQL syncs its log at each commit
/// (`synchronous_commit` is on for Herald's session), so a commit it acknowledged survives a crash of
/// either process.
public final class PostgresStore: Store {
    /// Every commit is durable when PostgreSQL acknowledges it: the writer has nothing to sync.
    public let synchronous = Synchronous.full
    public let location: String
    public let isShared = true
    private let connection: Lock<State>
    /// Whether the connection was up when last used (readiness reads it without waiting for the writer).
    private let connected = Atomic<Bool>(true)
    /// A listener for the commits of every replica, on a connection and a thread of its own (from its
    /// `start()`): it calls `heard` after each notification, and after each (re)connection, when some
    /// may have been missed. While it cannot connect, readiness says the database is lost.
    public func listen(_ heard: @escaping @Sendable () -> Void) -> PostgresListener {
        PostgresListener(url: url, channel: Self.channel, listening: listening, heard: heard)
    }

    /// Whether the listener (if any) is connected.
    private let listening = SharedFlag(true)
    /// The database's size at the last scrape that found the connection free.
    private let lastSize = Atomic<Int64>(-1)

    /// The key of the advisory lock each batch takes, the database's write lock ("HERA").
    static let lockKey: Int64 = 0x4845_5241
    /// The channel commits notify, with the committed sequence as payload.
    static let channel = "herald"
    private let url: String

    private struct State: Sendable {
        let connection: PostgresConnection
        /// Whether a batch transaction is open: then each change is a savepoint in it.
        var inBatch = false
        /// The sequence the batch's events reached, written when the batch commits.
        var batchSequence: UInt64?
        /// Whether the batch wrote anything (then the revision moves when it commits).
        var batchWrote = false
        /// The database's revision (one more for every batch of any replica that wrote something) as
        /// this store last read or wrote it.
        var seenRevision: Int64 = -1
        /// In a batch that began behind: the revision seen before it, from which the changes it missed
        /// can be read; -1 when unknown.
        var missedSince: Int64 = -1
    }

    /// Connects and migrates the database to the current schema. Refuses a database migrated by a
    /// newer Herald.
    public init(url: String) throws(StoreError) {
        let connection = try PostgresConnection(url)
        self.url = url
        location = connection.location
        try connection.execute("SET synchronous_commit = on")
        try PostgresMigrations.migrate(connection)
        self.connection = Lock(State(connection: connection))
    }

    /// Runs `body` with the connection, connecting again first if it broke. Inside a batch a broken
    /// connection is not replaced: the batch's transaction went with it.
    private func use<T>(_ body: (inout State) throws(StoreError) -> T) throws(StoreError) -> T {
        try connection.withLock { state throws(StoreError) -> T in
            defer { connected.store(state.connection.isConnected, ordering: .relaxed) }
            if !state.inBatch, try state.connection.reconnectIfBroken() {
                try state.connection.execute("SET synchronous_commit = on")
            }
            return try body(&state)
        }
    }

    /// Opens the batch's transaction, waits for the database's write lock, and returns the sequence
    /// committed (by any replica) so far.
    @discardableResult
    public func beginBatch() throws(StoreError) -> BatchStart? {
        try use { state throws(StoreError) -> BatchStart? in
            try state.connection.execute("BEGIN")
            do throws(StoreError) {
                try state.connection.query("SELECT pg_advisory_xact_lock($1)", [.int(Self.lockKey)])
                let row = try state.connection.query("SELECT value, revision FROM herald_sequence").rows.first
                let committed = UInt64(row?[0] ?? "") ?? 0
                let revision = Int64(row?[1] ?? "") ?? 0
                let behind = revision != state.seenRevision
                state.missedSince = behind ? state.seenRevision : -1
                state.seenRevision = revision
                state.inBatch = true
                state.batchSequence = nil
                state.batchWrote = false
                return BatchStart(committed: committed, behind: behind)
            } catch {
                if state.connection.isConnected { try? state.connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    public func commitBatch() throws(StoreError) {
        try use { state throws(StoreError) in
            guard state.inBatch else { return }
            defer {
                state.inBatch = false
                state.batchSequence = nil
                state.batchWrote = false
            }
            do throws(StoreError) {
                let revision = state.batchWrote ? try Self.advance(to: state.batchSequence, state.connection) : state.seenRevision
                try state.connection.execute("COMMIT")
                state.seenRevision = revision
            } catch {
                if state.connection.isConnected { try? state.connection.execute("ROLLBACK") }
                // A COMMIT whose answer was lost may have committed: the next batch reads what is there.
                state.seenRevision = -1
                throw error
            }
        }
    }

    public func rollbackBatch() {
        connection.withLock { state in
            guard state.inBatch else { return }
            if state.connection.isConnected { try? state.connection.execute("ROLLBACK") }
            state.inBatch = false
            state.batchSequence = nil
        }
    }

    /// PostgreSQL synced its log when it acknowledged the commit.
    public func syncLog() throws(StoreError) {}

    public func load(eventLimit: Int) throws(StoreError) -> StoredState {
        try use { state throws(StoreError) -> StoredState in
            let connection = state.connection
            var stored = StoredState()
            let row = try connection.query("SELECT value, revision FROM herald_sequence").rows.first
            stored.lastSequence = UInt64(row?[0] ?? "") ?? 0
            // What follows may already be newer: then the next batch catches up once more, harmlessly.
            state.seenRevision = Int64(row?[1] ?? "") ?? -1
            stored.records = try Self.records(changedAfter: nil, connection)
            stored.auctions = try Self.auctions(changedAfter: nil, connection)
            let events = try connection.query("SELECT id, topic, name, data, tags, at FROM herald_events ORDER BY id DESC LIMIT $1",
                                              [.int(Int64(max(eventLimit, 0)))])
            stored.events = events.rows.reversed().map(Self.event)
            return stored
        }
    }

    public func missedChanges() throws(StoreError) -> StoredChanges? {
        try use { state throws(StoreError) -> StoredChanges? in
            guard state.inBatch, state.missedSince >= 0 else { return nil }
            let connection = state.connection
            let since = PostgresConnection.Parameter.int(state.missedSince)
            var changes = StoredChanges()
            changes.changed.records = try Self.records(changedAfter: state.missedSince, connection)
            changes.removed = try connection.query("SELECT kind, id FROM herald_removals WHERE revision > $1 ORDER BY kind, id",
                                                   [since]).rows.map { ($0[0] ?? "", $0[1] ?? "") }
            changes.changed.auctions = try Self.auctions(changedAfter: state.missedSince, connection)
            return changes
        }
    }

    /// Records by kind, each in id order: every one, or those changed after a revision.
    private static func records(changedAfter revision: Int64?,
                                _ connection: PostgresConnection) throws(StoreError) -> [String: [(id: String, document: [UInt8])]] {
        let filter = revision == nil ? "" : "WHERE revision > $1"
        var records: [String: [(id: String, document: [UInt8])]] = [:]
        for row in try connection.query("SELECT kind, id, document FROM herald_records \(filter) ORDER BY kind, id",
                                        revision.map { [.int($0)] } ?? []).rows {
            records[row[0] ?? "", default: []].append((row[1] ?? "", PostgresConnection.bytes(row[2])))
        }
        return records
    }

    /// Auctions with their bids, in id order: every one, or those changed after a revision.
    private static func auctions(changedAfter revision: Int64?, _ connection: PostgresConnection) throws(StoreError) -> [StoredAuction] {
        let filter = revision == nil ? "" : "WHERE revision > $1"
        let parameters: [PostgresConnection.Parameter] = revision.map { [.int($0)] } ?? []
        var auctions: [StoredAuction] = []
        var index: [String: Int] = [:]
        for row in try connection.query("""
            SELECT id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at
            FROM herald_auctions \(filter) ORDER BY length(id), id
            """, parameters).rows {
            let id = row[0] ?? ""
            index[id] = auctions.count
            auctions.append(StoredAuction(
                id: id, item: row[1] ?? "", startingPrice: Int64(row[2] ?? "") ?? 0, createdAt: row[3] ?? "",
                status: row[4] ?? "", countdownSeconds: Int(row[5] ?? "") ?? 0, deadline: row[6], winner: row[7],
                closedAt: row[8]))
        }
        let bidFilter = revision == nil ? "" : "WHERE auction_id IN (SELECT id FROM herald_auctions WHERE revision > $1)"
        for row in try connection.query("""
            SELECT auction_id, number, bidder, amount, at FROM herald_bids \(bidFilter) ORDER BY auction_id, number
            """, parameters).rows {
            guard let position = index[row[0] ?? ""] else { continue }
            auctions[position].bids.append(StoredBid(number: Int(row[1] ?? "") ?? 0, bidder: row[2] ?? "",
                                                     amount: Int64(row[3] ?? "") ?? 0, at: row[4] ?? ""))
        }
        return auctions
    }

    public func commit(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?) throws(StoreError) {
        try use { state throws(StoreError) in
            try Self.change(&state, event: event?.id) { connection, revision throws(StoreError) in
                try Self.write(event: event, records: records, auction: auction, bid: bid, revision: revision, connection)
            }
        }
    }

    /// Runs `body` as one change: a savepoint of the batch's transaction, or outside a batch a
    /// transaction of its own that takes the write lock and moves the sequence and revision. If it
    /// throws, what it wrote is undone. `body` gets the revision its transaction commits, which the
    /// rows it writes carry (the write lock is held, so no other replica takes it meanwhile).
    private static func change(_ state: inout State, event: UInt64?,
                               _ body: (PostgresConnection, Int64) throws(StoreError) -> Void) throws(StoreError) {
        let connection = state.connection
        let (open, release, undo) = state.inBatch
            ? ("SAVEPOINT change", "RELEASE SAVEPOINT change", "ROLLBACK TO SAVEPOINT change")
            : ("BEGIN", "COMMIT", "ROLLBACK")
        try connection.execute(open)
        do throws(StoreError) {
            var committing = state.seenRevision + 1
            if !state.inBatch {
                try connection.query("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
                committing = (Int64(try connection.text("SELECT revision FROM herald_sequence") ?? "") ?? 0) + 1
            }
            try body(connection, committing)
            let revision = state.inBatch ? state.seenRevision : try advance(to: event, connection)
            try connection.execute(release)
            state.seenRevision = revision
        } catch {
            // Outside a batch, a COMMIT whose answer was lost may have committed: read what is there next.
            if !state.inBatch { state.seenRevision = -1 }
            if connection.isConnected {
                try? connection.execute(undo)
                if state.inBatch { try? connection.execute("RELEASE SAVEPOINT change") }
            }
            throw error
        }
        if state.inBatch {
            state.batchWrote = true
            if let event { state.batchSequence = event }
        }
    }

    private static func write(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?,
                              revision: Int64, _ connection: PostgresConnection) throws(StoreError) {
        if let event {
            try connection.query("INSERT INTO herald_events (id, topic, name, data, tags, at) VALUES ($1, $2, $3, $4, $5, $6)", [
                .int(Int64(event.id)), .text(event.topic), .text(event.name), .bytes(event.data),
                .text(JSONValue.array(event.tags.map { .string($0) }).serialized), .text(String(event.at.timeIntervalSince1970)),
            ])
        }
        if let auction {
            try connection.query("""
                INSERT INTO herald_auctions (id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at,
                    revision)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                ON CONFLICT (id) DO UPDATE SET status = excluded.status, deadline = excluded.deadline,
                    winner = excluded.winner, closed_at = excluded.closed_at, revision = excluded.revision
                """, [
                    .text(auction.id), .text(auction.item), .int(auction.startingPrice), .text(auction.createdAt), .text(auction.status),
                    .int(Int64(auction.countdownSeconds)), .optional(auction.deadline), .optional(auction.winner), .optional(auction.closedAt),
                    .int(revision),
                ])
            if let bid {
                try connection.query("INSERT INTO herald_bids (auction_id, number, bidder, amount, at) VALUES ($1, $2, $3, $4, $5)",
                                     [.text(auction.id), .int(Int64(bid.number)), .text(bid.bidder), .int(bid.amount), .text(bid.at)])
            }
        }
        for record in records {
            if let document = record.document {
                // A removal row of the same record may stay: catching up applies removals first.
                try connection.query("""
                    INSERT INTO herald_records (kind, id, document, revision) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (kind, id) DO UPDATE SET document = excluded.document, revision = excluded.revision
                    """, [.text(record.kind), .text(record.id), .bytes(document), .int(revision)])
            } else {
                // The removal is kept with its revision, so that replicas catching up remove it too.
                try connection.query("""
                    WITH gone AS (DELETE FROM herald_records WHERE kind = $1 AND id = $2)
                    INSERT INTO herald_removals (kind, id, revision) VALUES ($1, $2, $3)
                    ON CONFLICT (kind, id) DO UPDATE SET revision = excluded.revision
                    """, [.text(record.kind), .text(record.id), .int(revision)])
            }
        }
    }

    /// The sequence row, written last in its transaction (a reader that sees it committed sees every
    /// event up to it), with the revision one more. Every listener hears of it when the transaction
    /// commits. Returns the new revision.
    private static func advance(to sequence: UInt64?, _ connection: PostgresConnection) throws(StoreError) -> Int64 {
        let revision = try connection.text("UPDATE herald_sequence SET value = coalesce($1, value), revision = revision + 1 RETURNING revision",
                                           [sequence.map { .int(Int64($0)) } ?? .null])
        try connection.query("SELECT pg_notify($1, $2)", [.text(channel), .text(revision ?? "")])
        return Int64(revision ?? "") ?? -1
    }

    @discardableResult
    public func prune(keep: Int, before: Date?) throws(StoreError) -> UInt64 {
        try use { state throws(StoreError) -> UInt64 in
            let connection = state.connection
            let newest = UInt64(try connection.text("SELECT max(id) FROM herald_events") ?? "") ?? 0
            try connection.query("DELETE FROM herald_events WHERE id <= (SELECT max(id) FROM herald_events) - $1", [.int(Int64(max(keep, 0)))])
            if let before {
                try connection.query("DELETE FROM herald_events WHERE at < $1", [.text(String(before.timeIntervalSince1970))])
            }
            try connection.query("DELETE FROM herald_answers WHERE at < $1",
                                 [.text(String(Date().timeIntervalSince1970 - KeptAnswer.keptSeconds))])
            return UInt64(try connection.text("SELECT min(id) FROM herald_events") ?? "") ?? newest + 1
        }
    }

    public func keep(_ answer: KeptAnswer) throws(StoreError) {
        try use { state throws(StoreError) in
            try Self.change(&state, event: nil) { connection, _ throws(StoreError) in
                try connection.query("""
                    INSERT INTO herald_answers (key, fingerprint, status, headers, body, at) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
                        headers = excluded.headers, body = excluded.body, at = excluded.at
                    """, [.text(answer.key), .text(answer.fingerprint), .int(Int64(answer.status)), .text(KeptAnswer.encode(answer.headers)),
                          .bytes(answer.body), .text(String(answer.at.timeIntervalSince1970))])
            }
        }
    }

    public func keptAnswer(for key: String) throws(StoreError) -> KeptAnswer? {
        try use { state throws(StoreError) -> KeptAnswer? in
            guard let row = try state.connection.query("SELECT fingerprint, status, headers, body, at FROM herald_answers WHERE key = $1",
                                                       [.text(key)]).rows.first else { return nil }
            return KeptAnswer(key: key, fingerprint: row[0] ?? "", status: Int(row[1] ?? "") ?? 0, headers: KeptAnswer.decode(row[2] ?? ""),
                              body: PostgresConnection.bytes(row[3]), at: Date(timeIntervalSince1970: Double(row[4] ?? "") ?? 0))
        }
    }

    public func events(after id: UInt64) throws(StoreError) -> [StoredEvent] {
        try use { state throws(StoreError) -> [StoredEvent] in
            try state.connection.query("SELECT id, topic, name, data, tags, at FROM herald_events WHERE id > $1 ORDER BY id",
                                       [.int(Int64(clamping: id))]).rows.map(Self.event)
        }
    }

    private static func event(_ row: [String?]) -> StoredEvent {
        StoredEvent(id: UInt64(row[0] ?? "") ?? 0, topic: row[1] ?? "", name: row[2] ?? "", data: PostgresConnection.bytes(row[3]),
                    tags: SQLiteStore.tags(from: row[4] ?? ""), at: Date(timeIntervalSince1970: Double(row[5] ?? "") ?? 0))
    }

    public func eventCount() throws(StoreError) -> Int {
        try use { state throws(StoreError) -> Int in Int(try state.connection.text("SELECT count(*) FROM herald_events") ?? "0") ?? 0 }
    }

    public func unwritableReason() -> String? {
        connected.load(ordering: .relaxed) && listening.isSet ? nil : "the connection to PostgreSQL is lost"
    }

    /// The database's size (`pg_database_size`), read when the writer is not using the connection;
    /// otherwise the size read last time.
    public func sizeBytes() -> Int64? {
        let read: Int64?? = connection.withLockIfAvailable { state -> Int64? in
            guard !state.inBatch, state.connection.isConnected else { return nil }
            return (try? state.connection.text("SELECT pg_database_size(current_database())")).flatMap { $0.flatMap { Int64($0) } }
        }
        if let size = read ?? nil { lastSize.store(size, ordering: .relaxed) }
        let size = lastSize.load(ordering: .relaxed)
        return size >= 0 ? size : nil
    }
}
