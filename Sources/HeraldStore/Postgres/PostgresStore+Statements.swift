import Foundation

/// The SQL of `PostgresStore`: the reads that catch a replica up, and the statements that store a
/// change, each with its parameters (never spliced into the SQL).
extension PostgresStore {
    /// The read of the events after `sequence`, oldest first. Bounded by the sequence committed: no
    /// event lies beyond it, and PostgreSQL then uses the key even on a table without statistics.
    static func eventsRead(after sequence: UInt64) -> Statement {
        ("""
         SELECT id, topic, name, data, tags, at FROM herald_events
         WHERE id > $1 AND id <= (SELECT value FROM herald_sequence) ORDER BY id
         """, [.int(Int64(clamping: sequence))])
    }

    /// The reads of what changed in the revisions missed: records, removals, auctions, bids.
    static func missedReads(_ missed: Missed) -> [Statement] {
        [records(changed: missed), ("SELECT kind, id, revision FROM herald_removals \(missed.filter) ORDER BY kind, id", missed.parameters)]
            + auctions(changed: missed)
    }

    /// What changed, from the answers to `missedReads`: in the revisions after `after`, when given
    /// (the rest was taken in from news while the reads waited for the lock).
    static func changes(_ answers: [PostgresConnection.Rows], after: Int64 = -1) -> StoredChanges {
        var changes = StoredChanges()
        changes.changed.records = records(answers[0], after: after)
        changes.removed = answers[1].rows.filter { newer($0[2], than: after) }.map { ($0[0] ?? "", $0[1] ?? "") }
        changes.changed.auctions = auctions(answers[2], bids: answers[3], after: after)
        return changes
    }

    /// Whether a row's revision is after `after` (every row when it is -1).
    private static func newer(_ revision: String?, than after: Int64) -> Bool {
        after < 0 || (Int64(revision ?? "") ?? .max) > after
    }

    /// The revisions a batch that began behind missed: after the one it saw last, through the one it
    /// found (nil: the one committed now, read in the same statement). Bounded at both ends, so that
    /// PostgreSQL picks the revision index even before it has statistics of the table (an open range
    /// is guessed at a third of the table, and scanned).
    struct Missed {
        let after: Int64
        let through: Int64?
        var filter: String {
            through == nil ? "WHERE revision > $1 AND revision <= (SELECT revision FROM herald_sequence)"
                : "WHERE revision > $1 AND revision <= $2"
        }
        var parameters: [PostgresConnection.Parameter] { [.int(after)] + (through.map { [.int($0)] } ?? []) }
    }

    /// Runs `statements` and returns their rows: in a pipeline, all in one round trip.
    static func read(_ statements: [Statement], _ connection: PostgresConnection) throws(StoreError) -> [PostgresConnection.Rows] {
        guard connection.pipelined else {
            var answers: [PostgresConnection.Rows] = []
            for statement in statements { answers.append(try connection.query(statement.sql, statement.parameters)) }
            return answers
        }
        for statement in statements { try connection.send(statement.sql, statement.parameters, prepared: false) }
        return try connection.flush()
    }

    /// The read of records, each in id order: every one, or those changed in the revisions missed.
    static func records(changed missed: Missed?) -> Statement {
        ("SELECT kind, id, document, revision FROM herald_records \(missed?.filter ?? "") ORDER BY kind, id", missed?.parameters ?? [])
    }

    /// Records by kind, from their read (those changed after the revision `after`, when given).
    static func records(_ answer: PostgresConnection.Rows, after: Int64 = -1) -> [String: [(id: String, document: [UInt8])]] {
        var records: [String: [(id: String, document: [UInt8])]] = [:]
        for row in answer.rows where newer(row[3], than: after) {
            records[row[0] ?? "", default: []].append((row[1] ?? "", PostgresConnection.bytes(row[2])))
        }
        return records
    }

    /// The reads of auctions and of their bids, in id order: every one, or those changed in the
    /// revisions missed.
    static func auctions(changed missed: Missed?) -> [Statement] {
        let filter = missed?.filter ?? ""
        let parameters = missed?.parameters ?? []
        // Catching up: the bids missed, and each auction's count of bids (its last number, from the key).
        let bidFilter = filter
        let bidCount = missed == nil ? "" : ", (SELECT max(number) FROM herald_bids b WHERE b.auction_id = herald_auctions.id)"
        return [
            ("""
             SELECT id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at, revision, currency\(bidCount)
             FROM herald_auctions \(filter) ORDER BY length(id), id
             """, parameters),
            ("SELECT auction_id, number, bidder, amount, at, revision FROM herald_bids \(bidFilter) ORDER BY auction_id, number", parameters),
        ]
    }

    /// Auctions with their bids, from their reads (those changed after the revision `after`, when given).
    static func auctions(_ answer: PostgresConnection.Rows, bids: PostgresConnection.Rows, after: Int64 = -1) -> [StoredAuction] {
        var auctions: [StoredAuction] = []
        var index: [String: Int] = [:]
        for row in answer.rows where newer(row[9], than: after) {
            let id = row[0] ?? ""
            index[id] = auctions.count
            auctions.append(StoredAuction(
                id: id, item: row[1] ?? "", startingPrice: Int64(row[2] ?? "") ?? 0, currency: row[10] ?? "", createdAt: row[3] ?? "",
                status: row[4] ?? "", countdownSeconds: Int(row[5] ?? "") ?? 0, deadline: row[6], winner: row[7],
                closedAt: row[8]))
            if row.count > 11 { auctions[auctions.count - 1].bidCount = Int(row[11] ?? "0") ?? 0 }
        }
        for row in bids.rows where newer(row[5], than: after) {
            guard let position = index[row[0] ?? ""] else { continue }
            auctions[position].bids.append(StoredBid(number: Int(row[1] ?? "") ?? 0, bidder: row[2] ?? "",
                                                     amount: Int64(row[3] ?? "") ?? 0, at: row[4] ?? ""))
        }
        return auctions
    }

    /// The statements that store one change, in order.
    static func statements(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?,
                                   revision: Int64) -> [Statement] {
        var statements: [Statement] = []
        if let event {
            statements.append(("INSERT INTO herald_events (id, topic, name, data, tags, at) VALUES ($1, $2, $3, $4, $5, $6)", [
                .int(Int64(event.id)), .text(event.topic), .text(event.name), .bytes(event.data),
                .text(String(decoding: SQLiteStore.tagsText(event.tags), as: UTF8.self)), .text(String(event.at.timeIntervalSince1970)),
            ]))
        }
        if let auction {
            statements.append(("""
                INSERT INTO herald_auctions (id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at,
                    revision, currency)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                ON CONFLICT (id) DO UPDATE SET status = excluded.status, deadline = excluded.deadline,
                    winner = excluded.winner, closed_at = excluded.closed_at, revision = excluded.revision
                """, [
                    .text(auction.id), .text(auction.item), .int(auction.startingPrice), .text(auction.createdAt), .text(auction.status),
                    .int(Int64(auction.countdownSeconds)), .optional(auction.deadline), .optional(auction.winner), .optional(auction.closedAt),
                    .int(revision), .text(auction.currency),
                ]))
            if let bid {
                statements.append(("INSERT INTO herald_bids (auction_id, number, bidder, amount, at, revision) VALUES ($1, $2, $3, $4, $5, $6)",
                                   [.text(auction.id), .int(Int64(bid.number)), .text(bid.bidder), .int(bid.amount), .text(bid.at),
                                    .int(revision)]))
            }
        }
        for record in records {
            if let document = record.document {
                // A removal row of the same record may stay: catching up applies removals first.
                statements.append(("""
                    INSERT INTO herald_records (kind, id, document, revision) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (kind, id) DO UPDATE SET document = excluded.document, revision = excluded.revision
                    """, [.text(record.kind), .text(record.id), .bytes(document), .int(revision)]))
            } else {
                // The removal is kept with its revision, so that replicas catching up remove it too.
                statements.append(("""
                    WITH gone AS (DELETE FROM herald_records WHERE kind = $1 AND id = $2)
                    INSERT INTO herald_removals (kind, id, revision) VALUES ($1, $2, $3)
                    ON CONFLICT (kind, id) DO UPDATE SET revision = excluded.revision
                    """, [.text(record.kind), .text(record.id), .int(revision)]))
            }
        }
        return statements
    }

    /// The sequence row, written last in its transaction (a reader that sees it committed sees every
    /// event up to it), with the revision the transaction commits, and the notification every listener
    /// hears of when it commits.
    static func advance(to sequence: UInt64?, revision: Int64, notifying payloads: [String]) -> [Statement] {
        [("UPDATE herald_sequence SET value = coalesce($1, value), revision = $2", [sequence.map { .int(Int64($0)) } ?? .null, .int(revision)])]
            + payloads.map { ("SELECT pg_notify($1, $2)", [.text(channel), .text($0)]) }
    }

    static func event(_ row: [String?]) -> StoredEvent {
        StoredEvent(id: UInt64(row[0] ?? "") ?? 0, topic: row[1] ?? "", name: row[2] ?? "", data: PostgresConnection.bytes(row[3]),
                    tags: SQLiteStore.tags(from: row[4] ?? ""), at: Date(timeIntervalSince1970: Double(row[5] ?? "") ?? 0))
    }
}
