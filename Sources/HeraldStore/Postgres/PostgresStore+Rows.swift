import Foundation

/// A batch's rows, kept until they are sent as one multi-row statement per table (a few changes at a
/// time, and the rest at commit) instead of one statement per row: each statement costs PostgreSQL an
/// executor start and a round of its protocol, which is most of the work of a one-row insert, and the
/// batch holds the replicas' write lock until PostgreSQL has run them all.
extension PostgresStore {
    struct PendingRows {
        typealias Parameter = PostgresConnection.Parameter
        typealias Statement = PostgresConnection.Statement

        /// Changes kept after which they are sent: PostgreSQL runs them while the writer runs the next.
        static let sendAfter = 16
        /// Rows in one statement at most (PostgreSQL takes at most 65,535 parameters in one).
        static let rowsPerStatement = 200

        private var events: [[Parameter]] = []
        /// An auction changed twice is written once, as it was last.
        private var auctions = Latest()
        private var bids: [[Parameter]] = []
        /// A record changed, or removed, more than once: what it was last. Removed: a (kind, id) row.
        private var records = Latest()
        private var removals = Latest()
        /// The changes kept.
        private(set) var changes = 0

        /// Keeps the rows of one change, for the revision its batch commits. Refuses it (and keeps none
        /// of it) when a text value holds a NUL byte, which PostgreSQL's text cannot store: sent, it
        /// would fail the whole batch instead of this change.
        mutating func add(event: StoredEvent?, records changed: [RecordChange], auction: StoredAuction?, bid: StoredBid?,
                          revision: Int64) throws(StoreError) {
            var texts = [event?.topic, event?.name, auction?.id, auction?.item, auction?.createdAt, auction?.status,
                         auction?.deadline, auction?.winner, auction?.closedAt, bid?.bidder, bid?.at]
            for record in changed { texts += [record.kind, record.id] }
            guard !texts.contains(where: { $0?.utf8.contains(0) == true }) else {
                throw StoreError("PostgreSQL: a text value holds a NUL byte, which PostgreSQL cannot store", kind: .other)
            }
            if let event {
                events.append([.int(Int64(event.id)), .text(event.topic), .text(event.name), .bytes(event.data),
                               .text(String(decoding: SQLiteStore.tagsText(event.tags), as: UTF8.self)),
                               .text(String(event.at.timeIntervalSince1970))])
            }
            if let auction {
                auctions.set(auction.id, [.text(auction.id), .text(auction.item), .int(auction.startingPrice), .text(auction.createdAt),
                                          .text(auction.status), .int(Int64(auction.countdownSeconds)), .optional(auction.deadline),
                                          .optional(auction.winner), .optional(auction.closedAt), .int(revision)])
                if let bid {
                    bids.append([.text(auction.id), .int(Int64(bid.number)), .text(bid.bidder), .int(bid.amount), .text(bid.at),
                                 .int(revision)])
                }
            }
            for record in changed {
                let key = record.kind + "\u{0}" + record.id
                if let document = record.document {
                    removals.remove(key)
                    records.set(key, [.text(record.kind), .text(record.id), .bytes(document), .int(revision)])
                } else {
                    records.remove(key)
                    removals.set(key, [.text(record.kind), .text(record.id), .int(revision)])
                }
            }
            changes += 1
        }

        /// The statements that write the rows kept, and forgets them. Auctions before their bids.
        mutating func take() -> [Statement] {
            defer { self = PendingRows() }
            return Self.statements("""
                INSERT INTO herald_events (id, topic, name, data, tags, at) VALUES
                """, rows: events, tail: "")
                + Self.statements("""
                    INSERT INTO herald_auctions (id, item, starting_price, created_at, status, countdown_seconds, deadline, winner,
                        closed_at, revision) VALUES
                    """, rows: auctions.rows, tail: """
                     ON CONFLICT (id) DO UPDATE SET status = excluded.status, deadline = excluded.deadline,
                        winner = excluded.winner, closed_at = excluded.closed_at, revision = excluded.revision
                    """)
                + Self.statements("INSERT INTO herald_bids (auction_id, number, bidder, amount, at, revision) VALUES ", rows: bids, tail: "")
                // A removal row of the same record may stay: catching up applies removals first.
                + Self.statements("INSERT INTO herald_records (kind, id, document, revision) VALUES ", rows: records.rows, tail: """
                     ON CONFLICT (kind, id) DO UPDATE SET document = excluded.document, revision = excluded.revision
                    """)
                // The removal is kept with its revision, so that replicas catching up remove it too.
                + Self.statements("WITH doomed (kind, id, revision) AS (VALUES ", rows: removals.rows, types: ["text", "text", "bigint"],
                                  tail: """
                                  ), gone AS (DELETE FROM herald_records r USING doomed d WHERE r.kind = d.kind AND r.id = d.id)
                                  INSERT INTO herald_removals (kind, id, revision) SELECT kind, id, revision FROM doomed
                                  ON CONFLICT (kind, id) DO UPDATE SET revision = excluded.revision
                                  """)
        }

        /// `head`, the rows as `($1, $2), ($3, $4)`, then `tail`: as many statements as it takes.
        /// `types` casts each column (rows of a `VALUES` that is not an insert's have none).
        private static func statements(_ head: String, rows: [[Parameter]], types: [String]? = nil, tail: String) -> [Statement] {
            stride(from: 0, to: rows.count, by: rowsPerStatement).map { start in
                let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
                var sql = head
                var number = 0
                for (index, row) in chunk.enumerated() {
                    sql += index == 0 ? "(" : ", ("
                    for column in row.indices {
                        number += 1
                        sql += (column == 0 ? "$" : ", $") + String(number) + (types.map { "::" + $0[column] } ?? "")
                    }
                    sql += ")"
                }
                return (sql + tail, chunk.flatMap { $0 })
            }
        }

        /// Rows by key, each as it was set last, in the order keys were first set.
        private struct Latest {
            private var index: [String: Int] = [:]
            private var kept: [[Parameter]?] = []

            mutating func set(_ key: String, _ row: [Parameter]) {
                if let position = index[key] {
                    kept[position] = row
                } else {
                    index[key] = kept.count
                    kept.append(row)
                }
            }

            mutating func remove(_ key: String) {
                guard let position = index.removeValue(forKey: key) else { return }
                kept[position] = nil
            }

            var rows: [[Parameter]] { kept.compactMap { $0 } }
        }
    }
}
