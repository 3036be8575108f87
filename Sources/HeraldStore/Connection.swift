import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe: `SQLiteStore` keeps it behind a lock.
final class Connection {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]

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
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
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

    /// A prepared statement, cached by its SQL.
    func statement(_ sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard code == SQLITE_OK, let raw else { throw failure(code, "cannot prepare '\(sql)'") }
        let statement = Statement(raw: raw, connection: self)
        statements[sql] = statement
        return statement
    }

    /// The first column of the first row of a query, as text.
    func text(_ sql: String) throws(StoreError) -> String? {
        let statement = try statement(sql)
        defer { statement.reset() }  // an unfinished statement would hold a read transaction open
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// Whether a batch transaction is open (`beginBatch`): then each `transaction` is a savepoint in it.
    private(set) var inBatch = false
    /// The sequence the batch's events reached: written to `meta` once, when the batch commits.
    var batchSequence: UInt64?

    /// Runs `body` in one immediate transaction; rolls back if it throws. Inside a batch it is a
    /// savepoint of the batch's transaction: if it throws, only what it wrote is undone.
    func transaction(_ body: () throws(StoreError) -> Void) throws(StoreError) {
        if inBatch {
            // Prepared once: a savepoint per change costs two cached statements, not two parses.
            try statement("SAVEPOINT change").run()
            do {
                try body()
                try statement("RELEASE change").run()
            } catch {
                try? statement("ROLLBACK TO change").run()
                try? statement("RELEASE change").run()
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

    /// Opens one transaction for the changes that follow, until `commitBatch`.
    func beginBatch() throws(StoreError) {
        guard !inBatch else { return }
        try execute("BEGIN IMMEDIATE")
        inBatch = true
    }

    /// Records `sequence` as the last event id given out.
    func writeSequence(_ sequence: UInt64) throws(StoreError) {
        let update = try statement("UPDATE meta SET value = ? WHERE key = 'sequence'")
        try update.bind(1, Int64(sequence))
        try update.run()
    }

    /// Undoes the whole batch.
    func rollbackBatch() {
        guard inBatch else { return }
        inBatch = false
        batchSequence = nil
        try? execute("ROLLBACK")
    }

    /// Commits the batch's transaction; if that fails, rolls all of it back and throws.
    func commitBatch() throws(StoreError) {
        guard inBatch else { return }
        inBatch = false
        defer { batchSequence = nil }
        do {
            if let batchSequence { try writeSequence(batchSequence) }
            try statement("COMMIT").run()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

/// A prepared statement of a `Connection`.
final class Statement {
    let raw: OpaquePointer
    private unowned let connection: Connection

    init(raw: OpaquePointer, connection: Connection) {
        self.raw = raw
        self.connection = connection
    }

    deinit { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    func bind(_ index: Int32, _ value: Int64) throws(StoreError) { try check(sqlite3_bind_int64(raw, index, value), index) }
    func bind(_ index: Int32, _ value: Double) throws(StoreError) { try check(sqlite3_bind_double(raw, index, value), index) }
    func bind(_ index: Int32, _ value: String) throws(StoreError) { try check(csqlite_bind_text(raw, index, value, -1), index) }
    /// Text, or NULL for nil.
    func bind(_ index: Int32, _ value: String?) throws(StoreError) {
        if let value { try bind(index, value) } else { try check(sqlite3_bind_null(raw, index), index) }
    }
    func bind(_ index: Int32, _ bytes: [UInt8]) throws(StoreError) {
        let code = bytes.withUnsafeBytes { csqlite_bind_blob(raw, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count)) }
        try check(code, index)
    }

    /// A bind that failed (a value too big, an index out of range) fails the statement.
    private func check(_ code: Int32, _ index: Int32) throws(StoreError) {
        guard code == SQLITE_OK else { throw connection.failure(code, "cannot bind parameter \(index)") }
    }

    /// Advances; true while there is a row.
    func step() throws(StoreError) -> Bool {
        let code = sqlite3_step(raw)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.failure(code)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        _ = try step()
        sqlite3_reset(raw)
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    func text(_ column: Int32) -> String? { sqlite3_column_text(raw, column).map { String(cString: $0) } }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let bytes = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}
