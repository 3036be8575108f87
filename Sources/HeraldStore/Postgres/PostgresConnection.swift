import CLinux
import CPostgres
import Foundation

/// One libpq connection to PostgreSQL. Not thread-safe: `PostgresStore` keeps it behind a lock, and
/// only uses it holding that lock (hence unchecked Sendable).
///
/// Statements go with their parameters apart from the SQL (`PQexecParams`): text as text, bytes as
/// binary, so nothing a client sent is ever spliced into SQL.
final class PostgresConnection: @unchecked Sendable {
    // Unchecked: libpq's connection is not thread-safe; the store's is used only under its `Lock`, and
    // the listener's only on the listener's own thread, which keeps it to itself.
    let handle: OpaquePointer

    /// A statement's parameter.
    enum Parameter {
        case text(String)
        case bytes([UInt8])
        case null

        static func int(_ value: Int64) -> Parameter { .text(String(value)) }
        static func optional(_ value: String?) -> Parameter { value.map(Parameter.text) ?? .null }
    }

    /// Connects with a libpq connection string or URL (`postgres://user@host:port/database`). A
    /// connection attempt gives up after 5 s unless the URL says otherwise (`connect_timeout`).
    /// `name`: the session's `application_name` (`pg_stat_activity` shows it), unless the URL names one.
    init(_ conninfo: String, name: String = "herald") throws(StoreError) {
        // Processed in order, the URL last: what it names wins over these defaults.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", name, conninfo]
        let opened: OpaquePointer? = keywords.withCStrings { keywords in
            values.withCStrings { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle = opened else {
            throw StoreError("cannot connect to PostgreSQL: libpq could not allocate a connection", kind: .unreachable)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(handle)
            PQfinish(handle)
            throw StoreError("cannot connect to PostgreSQL: \(message)", kind: .unreachable)
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    /// Where the connection goes, without its password: `user@host:port/database`.
    var location: String {
        func text(_ value: UnsafeMutablePointer<CChar>?) -> String { value.map { String(cString: $0) } ?? "" }
        return "\(text(PQuser(handle)))@\(text(PQhost(handle))):\(text(PQport(handle)))/\(text(PQdb(handle)))"
    }

    /// Whether the connection is up, as far as libpq knows (it learns of a broken one when used).
    var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The connection's last error, when libpq refused a call: unreachable once the connection is down.
    var connectionFailure: StoreError {
        StoreError("PostgreSQL: \(Self.message(handle))", kind: isConnected ? .other : .unreachable)
    }

    /// Connects again if the connection broke. Returns whether it did (the session's state, such as
    /// its advisory locks, is then gone).
    func reconnectIfBroken() throws(StoreError) -> Bool {
        guard !isConnected else { return false }
        if pipelined {
            PQexitPipelineMode(handle)
            pipelined = false
            unread = []
            failure = nil
        }
        // A new session: what was prepared is gone.
        prepared = [:]
        PQreset(handle)
        guard isConnected else {
            throw StoreError("cannot reach PostgreSQL: \(Self.message(handle))", kind: .unreachable)
        }
        return true
    }

    /// Runs SQL without parameters, several statements allowed (a migration).
    func execute(_ sql: String) throws(StoreError) {
        guard let result = PQexec(handle, sql) else {
            throw connectionFailure
        }
        defer { PQclear(result) }
        try check(result)
    }

    /// Throws the failure a result reports, if it reports one.
    func check(_ result: OpaquePointer) throws(StoreError) {
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorMessage(result).map { String(cString: $0) }?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown error"
            let kind = isConnected ? Self.kind(sqlState: state) : .unreachable
            throw StoreError("PostgreSQL: \(message)\(state.map { " (SQLSTATE \($0))" } ?? "")", kind: kind)
        }
    }

    /// Runs one statement and returns its rows (none for a command), each column as text or nil. In a
    /// pipeline it is sent after what is queued and its answer waited for (one round trip for all).
    @discardableResult
    func query(_ sql: String, _ parameters: [Parameter] = []) throws(StoreError) -> Rows {
        if pipelined {
            try send(sql, parameters, prepared: false)
            return try flush().last ?? Rows(rows: [])
        }
        let result = Self.withParameters(parameters) { count, values, lengths, formats in
            PQexecParams(handle, sql, count, nil, values, lengths, formats, 0)
        }
        guard let result else {
            throw connectionFailure
        }
        defer { PQclear(result) }
        try check(result)
        return Self.rows(result)
    }

    /// Lends `parameters` to libpq's calling convention: text as text, bytes as binary, null as null.
    static func withParameters<R>(
        _ parameters: [Parameter],
        _ body: (Int32, [UnsafePointer<CChar>?], [Int32], [Int32]) -> R
    ) -> R {
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for value in values { free(value) } }
        for parameter in parameters {
            switch parameter {
            case .text(let text):
                values.append(strdup(text))
                lengths.append(0)
                formats.append(0)
            case .bytes(let bytes):
                let copy = malloc(max(bytes.count, 1))?.assumingMemoryBound(to: CChar.self)
                bytes.withUnsafeBytes { source in
                    if let base = source.baseAddress, let copy { memcpy(copy, base, bytes.count) }
                }
                values.append(copy)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            case .null:
                values.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
        return body(Int32(parameters.count), values.map { $0.map { UnsafePointer($0) } }, lengths, formats)
    }

    static func rows(_ result: OpaquePointer) -> Rows {
        var rows: [[String?]] = []
        let (count, columns) = (PQntuples(result), PQnfields(result))
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            rows.append((0..<columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            })
        }
        return Rows(rows: rows)
    }

    // MARK: Pipeline mode (libpq 14 and later)

    /// Whether statements are pipelined: `send` queues them without waiting, and `flush` (or a
    /// `query`) waits once for the answers to everything queued.
    var pipelined = false
    /// What was sent and not read yet, in order: a statement (whose rows `flush` returns), or the
    /// preparation of one (whose name is forgotten if it fails).
    var unread: [Unread] = []
    enum Unread {
        case statement
        case preparation(String)
    }
    /// The statements prepared on this connection (by their SQL): a pipelined statement is parsed and
    /// planned once per connection, not each time it runs.
    var prepared: [String: String] = [:]
    /// Names given so far (a failed preparation's name is not given again).
    var preparations = 0

    /// The first failure among queued statements, kept until `takeFailure()`: a statement that follows
    /// a failed one in the same round trip is not run (PostgreSQL skips to the sync).
    var failure: StoreError?

    /// A statement and its parameters.
    typealias Statement = (sql: String, parameters: [Parameter])

    /// The first failure of a queued statement since the last call, if any.
    func takeFailure() -> StoreError? {
        defer { failure = nil }
        return failure
    }

    /// Waits up to `milliseconds` for notifications (after `LISTEN`) and returns their channels and
    /// payloads. Throws when the connection broke.
    func notifications(waiting milliseconds: Int32) throws(StoreError) -> [(channel: String, payload: String)] {
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw StoreError("the connection to PostgreSQL is closed", kind: .unreachable) }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0, PQconsumeInput(handle) != 1 {
            throw StoreError("PostgreSQL: \(Self.message(handle))", kind: .unreachable)
        }
        var payloads: [(channel: String, payload: String)] = []
        while let notification = PQnotifies(handle) {
            payloads.append((notification.pointee.relname.map { String(cString: $0) } ?? "",
                             notification.pointee.extra.map { String(cString: $0) } ?? ""))
            PQfreemem(notification)
        }
        return payloads
    }

    /// The first column of the first row, as text.
    func text(_ sql: String, _ parameters: [Parameter] = []) throws(StoreError) -> String? {
        try query(sql, parameters).rows.first?.first ?? nil
    }

    /// What a SQLSTATE means for a caller (PostgreSQL's appendix A, "Error codes").
    static func kind(sqlState: String?) -> StoreError.Kind {
        guard let state = sqlState else { return .other }
        switch state {
        case "40001", "40P01", "55P03", "53300": return .busy  // serialization, deadlock, lock, too many connections
        case "53100": return .full
        case "25006": return .readOnly
        case "57P01", "57P02", "57P03": return .unreachable  // the server is shutting down or starting
        case "XX001", "XX002": return .corrupt
        default: return state.hasPrefix("08") ? .unreachable : .other
        }
    }

    static func message(_ handle: OpaquePointer) -> String {
        PQerrorMessage(handle).map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown error"
    }

    /// A result's rows, read out of libpq's result before it is freed.
    struct Rows {
        let rows: [[String?]]

        var count: Int { rows.count }
    }

    /// A `bytea` column as PostgreSQL writes it in text (`\x` and two hex digits per byte).
    static func bytes(_ text: String?) -> [UInt8] {
        guard let text else { return [] }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else { return utf8 }
        func nibble(_ digit: UInt8) -> UInt8 {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: 0
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index + 1 < utf8.count {
            bytes.append(nibble(utf8[index]) << 4 | nibble(utf8[index + 1]))
            index += 2
        }
        return bytes
    }
}

extension Array where Element == String {
    /// The strings as a NULL-terminated array of C strings, for as long as `body` runs.
    func withCStrings<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return body(pointers)
    }
}
