import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe: `SQLiteStore` keeps it behind a lock.
final class Connection {
    let handle: OpaquePointer
    /// Prepared statements, by where their SQL lies in the program (`statement(_:)`): a short list searched
    /// in order, since a dictionary's hashing cost more than the search (the store has about twenty).
    @exclusivity(unchecked) private var statementKeys: [UInt] = []
    @exclusivity(unchecked) private var statements: [Statement] = []
    /// A stored event's tags as text, written here for each insert instead of into a new array.
    @exclusivity(unchecked) var tagsBuffer: [UInt8] = []
    /// Pages in the write-ahead log after this connection's last commit, once `countLogPages()` is called.
    private let logPages = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    init(path: String) throws(StoreError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(handle)
            throw StoreError("cannot open \(path): \(message)", code: code)
        }
        self.handle = handle
        logPages.initialize(to: 0)
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        statements.removeAll()
        statementKeys.removeAll()
        sqlite3_close_v2(handle)
        logPages.deallocate()
    }

    /// From now on, commits count the log's pages instead of checkpointing when it passes 1,000 pages:
    /// `SQLiteStore.tidy()` sees to that.
    func countLogPages() {
        csqlite_count_log_pages_in(handle, logPages)
    }

    /// Pages in the log after the last commit: it starts again from its beginning at the first commit
    /// after a checkpoint that copied all of it.
    var logPageCount: Int { Int(logPages.pointee) }

    /// Copies the write-ahead log into the database, without waiting for readers; false when another
    /// checkpoint was running (it is tried again after the next batch).
    @discardableResult
    func checkpoint() -> Bool {
        sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK
    }

    var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    /// The failure SQLite just reported, with its code.
    func failure(_ code: Int32, _ context: String? = nil) -> StoreError {
        StoreError(context.map { "\($0): \(lastError)" } ?? lastError, code: code)
    }

    /// Runs SQL that returns no rows (several statements allowed).
    func execute(_ sql: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        guard code == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? lastError
            sqlite3_free(error)
            throw StoreError(message, code: sqlite3_extended_errcode(handle))
        }
    }

    /// A prepared statement, cached by where its SQL, a literal, lies in the program: hashing the text
    /// at each lookup cost more than the statement's bindings (6,000 instructions of a stored `PUT`), and
    /// a dictionary keyed by its address cost about 450 a lookup, the search 240 (reset included).
    func statement(_ sql: StaticString) throws(StoreError) -> Statement {
        let key = UInt(bitPattern: sql.utf8Start)
        if let index = statementKeys.firstIndex(of: key) {
            let cached = statements[index]
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, UnsafeRawPointer(sql.utf8Start).assumingMemoryBound(to: CChar.self), Int32(sql.utf8CodeUnitCount),
                                      UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard code == SQLITE_OK, let raw else { throw failure(code, "cannot prepare '\(sql)'") }
        let statement = Statement(raw: raw, connection: self)
        statementKeys.append(key)
        statements.append(statement)
        return statement
    }

    /// The first column of the first row of a query, as text.
    func text(_ sql: StaticString) throws(StoreError) -> String? {
        let statement = try statement(sql)
        defer { statement.reset() }  // an unfinished statement would hold a read transaction open
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// The first column of every row of a query, as text.
    func column(_ sql: StaticString) throws(StoreError) -> [String] {
        let statement = try statement(sql)
        defer { statement.reset() }
        var values: [String] = []
        while try statement.step() { values.append(statement.text(0) ?? "") }
        return values
    }

    /// Whether a batch transaction is open (`beginBatch`): then each `transaction` is one change of it.
    private var inBatch = false
    /// The batch's changes that were written, in order: run again when a later one fails (see `transaction`).
    private var batchWrites: [() throws(StoreError) -> Void] = []
    /// Why the batch can no longer commit: what was written of it could not be written again.
    private var batchLost: StoreError?

    /// Runs `body` in one immediate transaction; rolls back if it throws. Inside a batch it is one change
    /// of the batch's transaction, and if it throws, only what it wrote is undone: the batch is rolled
    /// back and its earlier changes are written again. A savepoint per change would do the same, but it
    /// costs every change (SQLite copies each page the change touches again into its sub-journal) to
    /// spare a failure that a full disk or a refused row makes rare.
    func transaction(_ body: @escaping () throws(StoreError) -> Void) throws(StoreError) {
        if inBatch {
            if let batchLost { throw batchLost }
            do {
                try body()
                batchWrites.append(body)
            } catch {
                writeBatchAgain()
                throw error
            }
            return
        }
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// After a change of the batch failed: undoes the whole transaction (SQLite may have already, after
    /// a full disk or an I/O error) and writes the changes before it again. If that fails too, the batch
    /// is lost: its next changes and its commit fail with that error.
    private func writeBatchAgain() {
        try? execute("ROLLBACK")
        do throws(StoreError) {
            try statement("BEGIN IMMEDIATE").run()
            for write in batchWrites { try write() }
        } catch {
            batchLost = error
            try? execute("ROLLBACK")
        }
    }

    /// Opens one transaction for the changes that follow, until `commitBatch`.
    func beginBatch() throws(StoreError) {
        guard !inBatch else { return }
        try statement("BEGIN IMMEDIATE").run()
        inBatch = true
        batchWrites.removeAll(keepingCapacity: true)
        batchLost = nil
    }

    /// Records `sequence` as the lowest the sequence can be, whatever events are left (`SQLiteStore.prune`).
    func raiseSequence(to sequence: UInt64) throws(StoreError) {
        let update = try statement("UPDATE meta SET value = max(value, ?) WHERE key = 'sequence'")
        try update.bind(1, Int64(sequence))
        try update.run()
    }

    /// Undoes the whole batch.
    func rollbackBatch() {
        guard inBatch else { return }
        endBatch()
        if batchLost == nil { try? execute("ROLLBACK") }
        batchLost = nil
    }

    /// Commits the batch's transaction; if that fails, rolls all of it back and throws.
    func commitBatch() throws(StoreError) {
        guard inBatch else { return }
        endBatch()
        if let batchLost {
            self.batchLost = nil
            throw batchLost
        }
        do {
            try statement("COMMIT").run()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func endBatch() {
        inBatch = false
        batchWrites.removeAll(keepingCapacity: true)
    }
}
