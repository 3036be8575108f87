public import Foundation
import CLinux
import HeraldThreads
import Synchronization

// Reads and upkeep: the state at start, what was missed, pruning, kept answers, the event log, size.
extension PostgresStore {
    /// Everything the store holds, as of one moment: outside a batch the reads share one snapshot (a
    /// read-only repeatable-read transaction), so the sequence, the records and the events agree while
    /// other replicas commit; inside a batch the write lock keeps them from committing.
    public func load(eventLimit: Int) throws(StoreError) -> StoredState {
        try use { state throws(StoreError) -> StoredState in
            let connection = state.connection
            let ownTransaction = !state.inBatch
            if ownTransaction { try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
            do throws(StoreError) {
                var stored = StoredState()
                let row = try connection.query("SELECT value, revision FROM herald_sequence").rows.first
                stored.lastSequence = UInt64(row?[0] ?? "") ?? 0
                let answers = try Self.read([Self.records(changed: nil)] + Self.auctions(changed: nil), connection)
                stored.records = Self.records(answers[0])
                stored.auctions = Self.auctions(answers[1], bids: answers[2])
                let events = try connection.query("SELECT id, topic, name, data, tags, at FROM herald_events ORDER BY id DESC LIMIT $1",
                                                  [.int(Int64(max(eventLimit, 0)))])
                stored.events = events.rows.reversed().map(Self.event)
                if ownTransaction { try connection.execute("COMMIT") }
                state.seenSequence = stored.lastSequence
                state.seenRevision = Int64(row?[1] ?? "") ?? -1
                return stored
            } catch {
                if ownTransaction, connection.isConnected { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    public func missedChanges() throws(StoreError) -> StoredChanges? {
        try use { state throws(StoreError) -> StoredChanges? in
            guard state.inBatch, state.missedSince >= 0 else { return nil }
            if let prefetched = state.prefetched { return prefetched.changes }
            // One round trip for the four reads.
            let missed = Missed(after: state.missedSince, through: state.seenRevision)
            return Self.changes(try Self.read(Self.missedReads(missed), state.connection))
        }
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
            try connection.query("DELETE FROM herald_revocations WHERE until <= $1", [.text(String(Date().timeIntervalSince1970))])
            return UInt64(try connection.text("SELECT min(id) FROM herald_events") ?? "") ?? newest + 1
        }
    }

    public func keep(_ answer: KeptAnswer) throws(StoreError) {
        try use { state throws(StoreError) in
            try Self.change(&state, event: nil) { _ in
                [("""
                    INSERT INTO herald_answers (key, fingerprint, status, headers, body, at) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
                        headers = excluded.headers, body = excluded.body, at = excluded.at
                    """, [.text(answer.key), .text(answer.fingerprint), .int(Int64(answer.status)), .text(KeptAnswer.encode(answer.headers)),
                          .bytes(answer.body), .text(String(answer.at.timeIntervalSince1970))])]
            }
        }
    }

    public func revoke(_ revocation: StoredRevocation) throws(StoreError) {
        try use { state throws(StoreError) in
            try Self.change(&state, event: nil) { _ in
                [("""
                    INSERT INTO herald_revocations (key, issued_before, until) VALUES ($1, $2, $3)
                    ON CONFLICT (key) DO UPDATE SET issued_before = excluded.issued_before, until = excluded.until
                    """, [.text(revocation.key), revocation.issuedBefore.map { .text(String($0)) } ?? .null, .text(String(revocation.until))])]
            }
        }
    }

    public func revocations(at now: Double) throws(StoreError) -> [StoredRevocation] {
        try use { state throws(StoreError) -> [StoredRevocation] in try Self.revocations(on: state.connection, at: now) }
    }

    static func revocations(on connection: PostgresConnection, at now: Double) throws(StoreError) -> [StoredRevocation] {
        try connection.query("SELECT key, issued_before, until FROM herald_revocations WHERE until > $1 ORDER BY key",
                             [.text(String(now))]).rows.map { row in
            StoredRevocation(key: row[0] ?? "", issuedBefore: row[1].flatMap(Double.init), until: Double(row[2] ?? "") ?? 0)
        }
    }

    /// The revocations in force, read by the replica listener on its own connection after each
    /// (re)connection and every `every` (`PostgresListener.Refresh`), for `run`: a replica that missed
    /// the message of one (its listener or the sender's was reconnecting) learns of it so.
    public static func revocationsRead(every: Duration, _ run: @escaping @Sendable ([StoredRevocation]) -> Void) -> PostgresListener.Refresh {
        PostgresListener.Refresh(every: every) { connection throws(StoreError) in
            run(try revocations(on: connection, at: Date().timeIntervalSince1970))
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
            if state.inBatch, let prefetched = state.prefetched, prefetched.after <= id { return prefetched.events.filter { $0.id > id } }
            let events = Self.eventsRead(after: id)
            return try state.connection.query(events.sql, events.parameters).rows.map(Self.event)
        }
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
