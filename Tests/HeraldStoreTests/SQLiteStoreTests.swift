import Foundation
@testable import HeraldStore
import HeraldJSON
import HeraldTestSupport
import HeraldThreads
import Synchronization
import Testing

@Suite struct SQLiteStoreTests {
    /// A fresh directory under the system's temporary one.
    func directory() -> String { temporaryDirectory("herald-store") }

    func event(_ id: UInt64, at: Date = Date(timeIntervalSince1970: 1_000_000), topic: String = "units/a") -> StoredEvent {
        StoredEvent(id: id, topic: topic, name: "unit", data: Array(#"{"topic":"\#(topic)","n":\#(id)}"#.utf8), tags: ["delay", "delayed"], at: at)
    }

    /// A full store says so: its error has SQLite's code, and the kind a server answers by (503 with
    /// `Retry-After` for full or busy, 500 for damaged). What failed is not stored in part.
    @Test func aFullStoreFailsWithItsCodeAndStoresNothingOfTheFailedChange() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        let pages = try #require(try store.connection.withLock { try $0.text("PRAGMA page_count") }.flatMap { Int($0) })
        try store.connection.withLock { try $0.execute("PRAGMA max_page_count = \(pages + 2)") }
        let big = [UInt8](repeating: 0x61, count: 4096)
        var failure: StoreError?
        var stored: UInt64 = 0
        for id in 1...50 {
            do {
                try store.commit(event: StoredEvent(id: UInt64(id), topic: "units/a", name: "unit", data: big, tags: [], at: Date()),
                                 records: [RecordChange(kind: "unit", id: "u\(id)", document: big)])
                stored = UInt64(id)
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "the store filled up")
        #expect(error.kind == .full, "\(error)")
        #expect(error.code.map { $0 & 0xFF } == 13, "SQLITE_FULL")
        #expect(error.description.contains("SQLite code"))
        let state = try store.load(eventLimit: 100)
        #expect(state.events.last?.id == stored, "the failed change left no event")
        #expect(state.records["unit"]?.count == Int(stored), "and no record")
    }

    @Test func errorKindsFollowSQLitesPrimaryCode() {
        #expect(StoreError("x", code: 5).kind == .busy)           // SQLITE_BUSY
        #expect(StoreError("x", code: 5 | (2 << 8)).kind == .busy)  // SQLITE_BUSY_SNAPSHOT, extended
        #expect(StoreError("x", code: 6).kind == .busy)           // SQLITE_LOCKED
        #expect(StoreError("x", code: 13).kind == .full)
        #expect(StoreError("x", code: 8).kind == .readOnly)
        #expect(StoreError("x", code: 11).kind == .corrupt)
        #expect(StoreError("x", code: 26).kind == .corrupt)       // SQLITE_NOTADB
        #expect(StoreError("x", code: 10).kind == .other)         // SQLITE_IOERR
        #expect(StoreError("x").kind == .other)
    }

    @Test func tagsRoundTripWhateverTheyHold() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let tags = ["object:a\nb", "object:[x", "", "object:\"q\""]
        do {
            let store = try SQLiteStore(directory: dir)
            try store.commit(event: StoredEvent(id: 1, topic: "notifications/n", name: "notification", data: Array("{}".utf8), tags: tags,
                                                at: Date(timeIntervalSince1970: 1_000_000)), records: [])
        }
        #expect(try SQLiteStore(directory: dir).load(eventLimit: 10).events.first?.tags == tags)
        #expect(SQLiteStore.tags(from: "delay\ndelayed") == ["delay", "delayed"], "rows from before read as they were written")
        for list in [tags, [], ["status=open"], ["a\u{2028}b", "\u{01}"]] {
            #expect(SQLiteStore.tagsText(list) == JSONValue.array(list.map { .string($0) }).bytes, "written as JSON writes them")
        }
    }

    @Test func aNewDirectoryGetsTheCurrentSchemaAndAnEmptyState() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        let state = try store.load(eventLimit: 100)
        #expect(state.lastSequence == 0 && state.events.isEmpty && state.records.isEmpty)
        #expect(FileManager.default.fileExists(atPath: dir + "/" + SQLiteStore.fileName))
    }

    @Test func eventsAndRecordsRoundTripAcrossReopening() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        do {
            let store = try SQLiteStore(directory: dir)
            try store.commit(event: event(1), records: [RecordChange(kind: "unit", id: "a", document: Array("{\"v\":1}".utf8))])
            try store.commit(event: nil, records: [RecordChange(kind: "auction", id: "1", document: Array("{}".utf8))])
            try store.commit(event: event(2), records: [
                RecordChange(kind: "unit", id: "a", document: Array("{\"v\":2}".utf8)),
                RecordChange(kind: "unit", id: "b", document: Array("{\"v\":3}".utf8)),
            ])
            try store.commit(event: event(3), records: [RecordChange(kind: "unit", id: "b", document: nil)])
        }
        let state = try SQLiteStore(directory: dir).load(eventLimit: 100)
        #expect(state.lastSequence == 3)
        #expect(state.events == [event(1), event(2), event(3)])
        #expect(state.records["unit"]?.map(\.id) == ["a"])
        #expect(state.records["unit"]?.first.map { String(decoding: $0.document, as: UTF8.self) } == "{\"v\":2}")
        #expect(state.records["auction"]?.count == 1)
        #expect(try SQLiteStore(directory: dir).load(eventLimit: 2).events.map(\.id) == [2, 3], "the newest, oldest first")
    }

    @Test func anAuctionIsOneRowAndEachBidIsAppended() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        func auction(_ status: String, deadline: String?, winner: String? = nil) -> StoredAuction {
            StoredAuction(id: "7", item: "lamp", startingPrice: 5, currency: "euro", createdAt: "2026-11-22T10:00:00Z", status: status,
                          countdownSeconds: 60, deadline: deadline, winner: winner, closedAt: winner == nil ? nil : "2026-11-22T10:02:00Z")
        }
        do {
            let store = try SQLiteStore(directory: dir)
            try store.commit(event: nil, records: [], auction: auction("open", deadline: nil))
            for number in 1...300 {
                try store.commit(event: event(UInt64(number)), records: [], auction: auction("open", deadline: "2026-11-22T10:01:00Z"),
                                 bid: StoredBid(number: number, bidder: "b\(number)", amount: Int64(number * 10), at: "2026-11-22T10:00:01Z"))
            }
            try store.commit(event: event(301), records: [], auction: auction("closed", deadline: nil, winner: "b300"))
            // A bid number taken twice is refused, not overwritten.
            #expect(throws: StoreError.self) {
                try store.commit(event: event(302), records: [], auction: auction("open", deadline: nil),
                                 bid: StoredBid(number: 300, bidder: "x", amount: 1, at: "2026-11-22T10:00:01Z"))
            }
        }
        let state = try SQLiteStore(directory: dir).load(eventLimit: 10)
        #expect(state.auctions.count == 1)
        #expect(state.auctions.first?.status == "closed" && state.auctions.first?.winner == "b300" && state.auctions.first?.deadline == nil)
        #expect(state.auctions.first?.bids.map(\.number) == Array(1...300))
        #expect(state.auctions.first?.bids.last == StoredBid(number: 300, bidder: "b300", amount: 3000, at: "2026-11-22T10:00:01Z"))
        #expect(state.records["auction"] == nil, "auctions are not records")
        #expect(state.lastSequence == 301)
    }

    @Test func aFailedCommitChangesNothing() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        try store.commit(event: event(1), records: [])
        #expect(throws: StoreError.self) {
            try store.commit(event: event(1), records: [RecordChange(kind: "unit", id: "x", document: [1])])
        }
        let state = try store.load(eventLimit: 10)
        #expect(state.records.isEmpty, "the record of the refused commit was rolled back")
        #expect(state.events.count == 1)
    }

    /// In a batch, a change the store refuses after part of it was written undoes only its own writes:
    /// the changes before and after it commit with the batch.
    @Test func aChangeRefusedInABatchUndoesOnlyItsOwnWrites() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let auction = StoredAuction(id: "7", item: "lamp", startingPrice: 5, currency: "euro", createdAt: "2026-11-22T10:00:00Z", status: "open",
                                    countdownSeconds: 60, deadline: nil, winner: nil, closedAt: nil)
        func bid(_ number: Int) -> StoredBid { StoredBid(number: number, bidder: "b\(number)", amount: Int64(number * 10), at: "2026-11-22T10:00:01Z") }
        do {
            let store = try SQLiteStore(directory: dir)
            try store.beginBatch()
            try store.commit(event: event(1), records: [RecordChange(kind: "unit", id: "a", document: Array("{\"v\":1}".utf8))])
            try store.commit(event: event(2), records: [], auction: auction, bid: bid(1))
            // Its event and the auction's row are written, then its bid is refused: the number is taken.
            #expect(throws: StoreError.self) {
                try store.commit(event: event(3), records: [RecordChange(kind: "unit", id: "x", document: [1])],
                                 auction: auction, bid: bid(1))
            }
            try store.commit(event: event(4), records: [RecordChange(kind: "unit", id: "b", document: Array("{\"v\":2}".utf8))],
                             auction: auction, bid: bid(2))
            try store.commitBatch()
        }
        let state = try SQLiteStore(directory: dir).load(eventLimit: 10)
        #expect(state.events.map(\.id) == [1, 2, 4])
        #expect(state.records["unit"]?.map(\.id) == ["a", "b"])
        #expect(state.auctions.first?.bids.map(\.number) == [1, 2])
        #expect(state.lastSequence == 4)
    }

    /// Within a batch a record is written, deleted and written again in the order its changes came: the
    /// later write wins, and a deletion undoes the earlier.
    @Test func aRecordChangedSeveralTimesInABatchEndsAsItsLastChange() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        func put(_ id: String, _ value: Int) -> RecordChange { RecordChange(kind: "unit", id: id, document: Array("{\"v\":\(value)}".utf8)) }
        func delete(_ id: String) -> RecordChange { RecordChange(kind: "unit", id: id, document: nil) }
        do {
            let store = try SQLiteStore(directory: dir)
            try store.beginBatch()
            try store.commit(event: event(1), records: [put("a", 1), put("b", 1), put("c", 1)])
            try store.commit(event: event(2), records: [put("a", 2)])
            try store.commit(event: event(3), records: [delete("b")])
            try store.commit(event: event(4), records: [put("c", 2), delete("c")])
            try store.commit(event: event(5), records: [put("a", 3), delete("d"), put("d", 1)])
            try store.commitBatch()
        }
        let state = try SQLiteStore(directory: dir).load(eventLimit: 10)
        let records = (state.records["unit"] ?? []).map { "\($0.0)=\(String(decoding: $0.1, as: UTF8.self))" }
        #expect(records == [#"a={"v":3}"#, #"d={"v":1}"#])
        #expect(state.events.map(\.id) == [1, 2, 3, 4, 5])
    }

    /// SQLite's checkpoint does not run inside a commit: once the log holds 1,000 pages, tidying after a
    /// batch asks the checkpointer's thread for it, and the database file takes the log's pages then.
    @Test func theCheckpointRunsOnItsOwnThreadOnceTheLogHoldsAThousandPages() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        let start = try databaseBytes(store)
        var id: UInt64 = 0
        for _ in 0..<20 { try commit(to: store, id: &id, data: Array("{}".utf8)) }
        store.tidy()
        #expect(try databaseBytes(store) == start && store.checkpointer.passes.load(ordering: .relaxed) == 0, "a short log is left alone")
        let big = try fillLog(of: store, to: 1_000, id: &id)
        #expect(try databaseBytes(store) == start, "no checkpoint inside a commit")
        store.tidy()
        let deadline = Date().addingTimeInterval(30)
        while store.checkpointer.passes.load(ordering: .relaxed) == 0, Date() < deadline { usleep(10_000) }
        #expect(store.checkpointer.passes.load(ordering: .relaxed) == 1)
        #expect(try databaseBytes(store) >= start + big * 4096, "the log's pages are in the database")
        try commit(to: store, id: &id, data: Array("{}".utf8))
        #expect(store.connection.withLock { $0.logPageCount } < 10, "and the log started again")
        #expect(try store.load(eventLimit: 10_000).events.count == Int(id))
    }

    /// Past `ownCheckpointPages` (a writer that never paused long enough for the checkpointer to copy the
    /// whole log), tidying copies the log on the writer's thread at once, and the log starts again.
    @Test func pastItsLimitTheWriterCheckpointsTheLogItself() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir, ownCheckpointPages: 1_500)
        let start = try databaseBytes(store)
        var id: UInt64 = 0
        let big = try fillLog(of: store, to: 1_500, id: &id)
        store.tidy()
        #expect(try databaseBytes(store) >= start + big * 4096, "copied before tidy() returned")
        #expect(store.checkpointer.passes.load(ordering: .relaxed) == 0, "not by the checkpointer")
        try commit(to: store, id: &id, data: Array("{}".utf8))
        #expect(store.connection.withLock { $0.logPageCount } < 10)
    }

    func databaseBytes(_ store: SQLiteStore) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int)
    }

    func commit(to store: SQLiteStore, id: inout UInt64, data: [UInt8]) throws {
        id += 1
        try store.commit(event: StoredEvent(id: id, topic: "units/a", name: "unit", data: data, tags: [], at: Date()), records: [])
    }

    /// Commits events of a page each until the log holds `pages`; returns how many.
    func fillLog(of store: SQLiteStore, to pages: Int, id: inout UInt64) throws -> Int {
        var count = 0
        while store.connection.withLock({ $0.logPageCount }) < pages {
            try commit(to: store, id: &id, data: [UInt8](repeating: 0x61, count: 4096))
            count += 1
        }
        return count
    }

    @Test func pruningByCountAndAgeNeverRewindsTheSequence() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        let old = Date(timeIntervalSince1970: 1_000)
        let recent = Date(timeIntervalSince1970: 2_000_000)
        for id in 1...10 { try store.commit(event: event(UInt64(id), at: id <= 3 ? old : recent), records: []) }
        #expect(try store.prune(keep: 8, before: nil) == 3)
        #expect(try store.eventCount() == 8)
        #expect(try store.prune(keep: 100, before: Date(timeIntervalSince1970: 10_000)) == 4)
        #expect(try store.prune(keep: 0, before: nil) == 11, "none left: replay starts after the newest deleted")
        try store.commit(event: event(11), records: [])
        #expect(try store.prune(keep: 0, before: nil) == 12)
        #expect(try store.eventCount() == 0)
        #expect(try store.load(eventLimit: 10).lastSequence == 11, "numbers are never reused")
    }

    /// By age, the oldest go up to the first that is not old, so what is kept has no gap, even when the
    /// clock went back between two events.
    @Test func pruningByAgeKeepsTheHistoryWithoutGaps() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let store = try SQLiteStore(directory: dir)
        let times: [TimeInterval] = [1_000, 2_000, 3_000_000, 1_500, 3_000_000]
        for (index, time) in times.enumerated() {
            try store.commit(event: event(UInt64(index + 1), at: Date(timeIntervalSince1970: time)), records: [])
        }
        #expect(try store.prune(keep: 100, before: Date(timeIntervalSince1970: 10_000)) == 3)
        #expect(try store.events(after: 0).map(\.id) == [3, 4, 5], "the old one after a new one stays")
        #expect(try store.prune(keep: 100, before: Date(timeIntervalSince1970: 4_000_000)) == 6, "all old: none left")
        #expect(try store.eventCount() == 0)
    }

    @Test func migrationsGoByNameAndADatabaseFromANewerHeraldIsRefused() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        _ = try SQLiteStore(directory: dir)
        let names = SQLiteMigrations.all.map(\.name)
        #expect(try sqlite(dir, "SELECT group_concat(name, ',') FROM (SELECT name FROM migrations ORDER BY name)") == names.joined(separator: ","))
        #expect(try sqlite(dir, "PRAGMA user_version") == String(names.count), "a Herald from before the names counts them")
        _ = try SQLiteStore(directory: dir)  // nothing to run the second time
        #expect(try sqlite(dir, "SELECT count(*) FROM migrations") == String(names.count))

        try sqlite(dir, "INSERT INTO migrations (name) VALUES ('9999-from-the-future')")
        let refusal = #expect(throws: StoreError.self) { try SQLiteStore(directory: dir) }
        #expect(refusal?.description.contains("newer Herald (9999-from-the-future)") == true, "\(String(describing: refusal))")
    }

    @Test func aDatabaseFromBeforeTheNamesIsMigratedByItsVersionOrRefusedWhenNewer() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        _ = try SQLiteStore(directory: dir)
        // As schema 2 left it: no names, two steps counted, no table of kept answers, no currencies,
        // no revocations.
        try sqlite(dir, "DROP TABLE migrations")
        try sqlite(dir, "DROP TABLE answers")
        try sqlite(dir, "DROP TABLE revocations")
        try sqlite(dir, "ALTER TABLE auctions DROP COLUMN currency")
        try sqlite(dir, "PRAGMA user_version = 2")
        _ = try SQLiteStore(directory: dir)
        #expect(try sqlite(dir, "SELECT count(*) FROM sqlite_schema WHERE name = 'answers'") == "1", "the third step ran")
        #expect(try sqlite(dir, "SELECT count(*) FROM migrations") == String(SQLiteMigrations.all.count))

        try sqlite(dir, "DROP TABLE migrations")
        try sqlite(dir, "PRAGMA user_version = 99")
        #expect { try SQLiteStore(directory: dir) } throws: { ($0 as? StoreError)?.description.contains("newer Herald") == true }
    }

    @Test func aFileThatIsNotADatabaseIsRefused() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: dir + "/" + SQLiteStore.fileName))
        #expect { try SQLiteStore(directory: dir) } throws: { ($0 as? StoreError)?.description.contains("not a Herald database") == true }
    }

    @Test func anUnwritableDirectoryIsRefused() throws {
        #expect { try SQLiteStore(directory: "/proc/herald-cannot-be-here") } throws: { $0 is StoreError }
        let file = directory()
        defer { removeTemporaryDirectory(file) }
        try Data().write(to: URL(fileURLWithPath: file))
        #expect(throws: StoreError.self) { try SQLiteStore(directory: file + "/below-a-file") }
    }

    @Test func aSecondHeraldOnTheSameDirectoryIsRefused() throws {
        let dir = directory()
        defer { removeTemporaryDirectory(dir) }
        let first = try SQLiteStore(directory: dir)
        #expect { try SQLiteStore(directory: dir) } throws: { ($0 as? StoreError)?.description.contains("another Herald") == true }
        _ = first
    }

    /// Runs SQL on the store's file through a second connection (the store must be closed), and returns
    /// the first column of the first row, if any.
    @discardableResult
    func sqlite(_ dir: String, _ sql: String) throws -> String? {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchone(); "
                                 + "c.commit(); print('' if r is None else r[0], end='')",
                             dir + "/" + SQLiteStore.fileName, sql]
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw StoreError("python sqlite3 failed") }
        return text.isEmpty ? nil : text
    }
}
