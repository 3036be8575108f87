import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe: `SQLiteStore` keeps it behind a lock.
final class Connection {
    let handle: OpaquePointer
    private var statements: [UInt: Statement] = [:]

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

    /// A prepared statement, cached by where its SQL, a literal, lies in the program: hashing the text
    /// at each lookup cost more than the statement's bindings (6,000 instructions of a stored `PUT`).
    func statement(_ sql: StaticString) throws(StoreError) -> Statement {
        let key = UInt(bitPattern: sql.utf8Start)
        if let cached = statements[key] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, UnsafeRawPointer(sql.utf8Start).assumingMemoryBound(to: CChar.self), Int32(sql.utf8CodeUnitCount),
                                      UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard code == SQLITE_OK, let raw else { throw failure(code, "cannot prepare '\(sql)'") }
        let statement = Statement(raw: raw, connection: self)
        statements[key] = statement
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
