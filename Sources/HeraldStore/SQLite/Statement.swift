import CSQLite

/// A prepared statement of a `Connection`.
final class Statement {
    let raw: OpaquePointer
    private unowned let connection: Connection

    init(raw: OpaquePointer, connection: Connection) {
        self.raw = raw
        self.connection = connection
    }

    deinit { sqlite3_finalize(raw) }

    /// Ready to run again. Its bindings stay: every use binds all its parameters.
    func reset() {
        sqlite3_reset(raw)
    }

    func bind(_ index: Int32, _ value: Int64) throws(StoreError) { try check(sqlite3_bind_int64(raw, index, value), index) }
    func bind(_ index: Int32, _ value: Double) throws(StoreError) { try check(sqlite3_bind_double(raw, index, value), index) }
    func bind(_ index: Int32, _ value: String) throws(StoreError) { try check(csqlite_bind_text(raw, index, value, -1), index) }
    /// Text, or NULL for nil.
    func bind(_ index: Int32, _ value: String?) throws(StoreError) {
        if let value { try bind(index, value) } else { try check(sqlite3_bind_null(raw, index), index) }
    }
    /// UTF-8 bytes as text.
    func bindText(_ index: Int32, _ bytes: [UInt8]) throws(StoreError) {
        guard !bytes.isEmpty else { return try bind(index, "") }
        let code = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { csqlite_bind_text(raw, index, $0.baseAddress, Int32($0.count)) }
        }
        try check(code, index)
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
