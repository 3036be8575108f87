import CSQLite

/// A prepared statement of a `Connection`.
final class Statement {
    let raw: OpaquePointer
    private unowned let connection: Connection

    /// Each parameter's text or blob, copied into a buffer the statement owns and bound in place: SQLite
    /// would otherwise copy it into memory of its own at every bind (an allocation and a free each).
    /// A buffer lives as long as the statement and is overwritten by its parameter's next bind, which
    /// always comes before the next step. Only the thread holding the connection's lock touches them.
    @exclusivity(unchecked) private var buffers: [UnsafeMutableRawBufferPointer] = []

    init(raw: OpaquePointer, connection: Connection) {
        self.raw = raw
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(raw)
        for buffer in buffers where buffer.baseAddress != nil { buffer.deallocate() }
    }

    /// Ready to run again. Its bindings stay: every use binds all its parameters.
    func reset() {
        sqlite3_reset(raw)
    }

    func bind(_ index: Int32, _ value: Int64) throws(StoreError) { try check(sqlite3_bind_int64(raw, index, value), index) }
    func bind(_ index: Int32, _ value: Double) throws(StoreError) { try check(sqlite3_bind_double(raw, index, value), index) }
    func bind(_ index: Int32, _ value: String) throws(StoreError) {
        var value = value
        try check(value.withUTF8 { bindInPlace(index, UnsafeRawBufferPointer($0), text: true) }, index)
    }
    /// A number, or NULL for nil.
    func bind(_ index: Int32, _ value: Double?) throws(StoreError) {
        if let value { try bind(index, value) } else { try check(sqlite3_bind_null(raw, index), index) }
    }
    /// Text, or NULL for nil.
    func bind(_ index: Int32, _ value: String?) throws(StoreError) {
        if let value { try bind(index, value) } else { try check(sqlite3_bind_null(raw, index), index) }
    }
    /// UTF-8 bytes as text.
    func bindText(_ index: Int32, _ bytes: [UInt8]) throws(StoreError) {
        try check(bytes.withUnsafeBytes { bindInPlace(index, $0, text: true) }, index)
    }
    func bind(_ index: Int32, _ bytes: [UInt8]) throws(StoreError) {
        try check(bytes.withUnsafeBytes { bindInPlace(index, $0, text: false) }, index)
    }

    /// SQLite's result code.
    private func bindInPlace(_ index: Int32, _ bytes: UnsafeRawBufferPointer, text: Bool) -> Int32 {
        let slot = Int(index) - 1
        guard slot >= 0, !bytes.isEmpty else {
            // Empty (or an index SQLite refuses): its own copy of nothing.
            return text ? csqlite_bind_text(raw, index, "", 0) : csqlite_bind_blob(raw, index, UnsafeRawPointer(bitPattern: 1), 0)
        }
        while buffers.count <= slot { buffers.append(UnsafeMutableRawBufferPointer(start: nil, count: 0)) }
        if buffers[slot].count < bytes.count {
            if buffers[slot].baseAddress != nil { buffers[slot].deallocate() }
            buffers[slot] = .allocate(byteCount: max(bytes.count, 64), alignment: 1)
        }
        let buffer = buffers[slot]
        guard let start = buffer.baseAddress else { return SQLITE_NOMEM }
        buffer.copyMemory(from: bytes)
        return text
            ? csqlite_bind_text_in_place(raw, index, start.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
            : csqlite_bind_blob_in_place(raw, index, start, Int32(bytes.count))
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
