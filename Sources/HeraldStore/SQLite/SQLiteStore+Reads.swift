import CSQLite
public import Foundation
import HeraldJSON
import HeraldThreads
import Synchronization

// Reads and upkeep: kept answers, the event log, its tags' stored form, pruning, size.
extension SQLiteStore {
    /// Deletes events beyond the newest `keep`, and the oldest up to the first not older than `before`.
    /// Returns the first id that can still be replayed: the oldest kept, or one past the newest deleted
    /// when none is left. Worked out under the same lock as commits, so an event committed meanwhile is
    /// never below it.
    @discardableResult
    public func prune(keep: Int, before: Date?) throws(StoreError) -> UInt64 {
        try connection.withLock { connection throws(StoreError) in
            let newest = try connection.text("SELECT max(id) FROM events").flatMap { UInt64($0) } ?? 0
            try connection.transaction { [connection] () throws(StoreError) in
                // The sequence is the newest event's id (`load`): before that event can go, its id is
                // written down as the floor, in the same transaction, so numbers are never reused.
                try connection.raiseSequence(to: newest)
                let byCount = try connection.statement("DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?")
                try byCount.bind(1, Int64(max(keep, 0)))
                try byCount.run()
                if let before {
                    // The oldest events up to the first that is not old: ids go with time, so the scan in
                    // their order stops there, without an index on `at`, and the history kept has no gap
                    // even if the clock once went back.
                    let byAge = try connection.statement("""
                        DELETE FROM events WHERE id < coalesce((SELECT id FROM events WHERE at >= ? ORDER BY id LIMIT 1),
                                                               (SELECT max(id) FROM events) + 1)
                        """)
                    try byAge.bind(1, before.timeIntervalSince1970)
                    try byAge.run()
                }
                let answers = try connection.statement("DELETE FROM answers WHERE at < ?")
                try answers.bind(1, Date().timeIntervalSince1970 - KeptAnswer.keptSeconds)
                try answers.run()
                let revocations = try connection.statement("DELETE FROM revocations WHERE until <= ?")
                try revocations.bind(1, Date().timeIntervalSince1970)
                try revocations.run()
            }
            return try connection.text("SELECT min(id) FROM events").flatMap { UInt64($0) } ?? newest + 1
        }
    }

    public func unwritableReason() -> String? {
        access(path, W_OK) == 0 ? nil : "the store cannot be written (\(String(cString: strerror(errno))))"
    }

    /// The database file and its write-ahead log.
    public func sizeBytes() -> Int64? {
        func size(_ path: String) -> Int64 {
            var status = stat()
            return stat(path, &status) == 0 ? Int64(status.st_size) : 0
        }
        return size(path) + size(path + "-wal")
    }

    public func keep(_ answer: KeptAnswer) throws(StoreError) {
        try connection.withLock { connection throws(StoreError) in
            try connection.transaction { [connection] () throws(StoreError) in
                let insert = try connection.statement(
                    "INSERT OR REPLACE INTO answers (key, fingerprint, status, headers, body, at) VALUES (?, ?, ?, ?, ?, ?)")
                try insert.bind(1, answer.key)
                try insert.bind(2, answer.fingerprint)
                try insert.bind(3, Int64(answer.status))
                try insert.bind(4, KeptAnswer.encode(answer.headers))
                try insert.bind(5, answer.body)
                try insert.bind(6, answer.at.timeIntervalSince1970)
                try insert.run()
            }
        }
    }

    public func revoke(_ revocation: StoredRevocation) throws(StoreError) {
        try connection.withLock { connection throws(StoreError) in
            try connection.transaction { [connection] () throws(StoreError) in
                let insert = try connection.statement("INSERT OR REPLACE INTO revocations (key, issued_before, until) VALUES (?, ?, ?)")
                try insert.bind(1, revocation.key)
                try insert.bind(2, revocation.issuedBefore)
                try insert.bind(3, revocation.until)
                try insert.run()
            }
        }
    }

    public func revocations(at now: Double) throws(StoreError) -> [StoredRevocation] {
        try connection.withLock { connection throws(StoreError) -> [StoredRevocation] in
            let select = try connection.statement("SELECT key, issued_before, until FROM revocations WHERE until > ? ORDER BY key")
            defer { select.reset() }
            try select.bind(1, now)
            var found: [StoredRevocation] = []
            while try select.step() {
                found.append(StoredRevocation(key: select.text(0) ?? "", issuedBefore: select.text(1).flatMap(Double.init),
                                              until: select.double(2)))
            }
            return found
        }
    }

    public func keptAnswer(for key: String) throws(StoreError) -> KeptAnswer? {
        try connection.withLock { connection throws(StoreError) -> KeptAnswer? in
            let select = try connection.statement("SELECT fingerprint, status, headers, body, at FROM answers WHERE key = ?")
            defer { select.reset() }
            try select.bind(1, key)
            guard try select.step() else { return nil }
            return KeptAnswer(key: key, fingerprint: select.text(0) ?? "", status: Int(select.int(1)),
                              headers: KeptAnswer.decode(select.text(2) ?? ""), body: select.blob(3),
                              at: Date(timeIntervalSince1970: select.double(4)))
        }
    }

    public func events(after id: UInt64) throws(StoreError) -> [StoredEvent] {
        try connection.withLock { connection throws(StoreError) -> [StoredEvent] in
            let events = try connection.statement("SELECT id, topic, name, data, tags, at FROM events WHERE id > ? ORDER BY id")
            try events.bind(1, Int64(clamping: id))
            var found: [StoredEvent] = []
            while try events.step() {
                found.append(StoredEvent(id: UInt64(events.int(0)), topic: events.text(1) ?? "", name: events.text(2) ?? "",
                                         data: events.blob(3), tags: events.text(4).map(Self.tags(from:)) ?? [],
                                         at: Date(timeIntervalSince1970: events.double(5))))
            }
            return found
        }
    }

    /// How many events the store holds.
    public func eventCount() throws(StoreError) -> Int {
        try connection.withLock { connection throws(StoreError) in Int(try connection.text("SELECT count(*) FROM events") ?? "0") ?? 0 }
    }

    /// An event's tags as both stores keep them and `tags(from:)` reads them: a JSON array of strings,
    /// written without making a `JSONValue`.
    static func tagsText(_ tags: [String]) -> [UInt8] {
        var out: [UInt8] = []
        tagsText(tags, into: &out)
        return out
    }

    /// The tags' text written over `out`, which keeps its storage from one event to the next.
    static func tagsText(_ tags: [String], into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(UInt8(ascii: "["))
        for tag in tags {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(tag, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// A stored event's tags: a JSON array of strings, so any tag (one with a newline too) reads back as
    /// it was; rows written before that joined them with newlines.
    static func tags(from text: String) -> [String] {
        if text.isEmpty { return [] }
        if text.hasPrefix("["), case .array(let items)? = try? JSONValue.parse(Array(text.utf8)) {
            let strings = items.compactMap(\.stringValue)
            if strings.count == items.count { return strings }
        }
        return text.split(separator: "\n").map(String.init)
    }
}
