import CMicroHTTPD

/// libmicrohttpd responses made for shared bytes (`Response.Body.shared`), queued again while the same
/// bytes come with the same status and headers: no copy of the body, no headers built. libmicrohttpd
/// counts the connections sending a response; each kept one also holds a reference of its own,
/// dropped when it leaves. The daemon's thread only.
final class KeptResponses: @unchecked Sendable {
    private struct Entry {
        /// Held, so the storage's address names these bytes for as long as the entry is kept.
        let bytes: [UInt8]
        let status: Int
        let headers: [(name: String, value: String)]
        let response: OpaquePointer
    }

    /// Responses kept at most; the oldest goes first.
    static let capacity = 64
    private var entries: [Entry] = []

    deinit {
        for entry in entries { MHD_destroy_response(entry.response) }
    }

    /// The kept response for exactly these bytes (the same storage), status and headers.
    func response(for bytes: [UInt8], status: Int, headers: [(name: String, value: String)]) -> OpaquePointer? {
        let address = bytes.withUnsafeBufferPointer { $0.baseAddress }
        return entries.last { entry in
            entry.status == status && entry.bytes.count == bytes.count
                && entry.bytes.withUnsafeBufferPointer { $0.baseAddress } == address
                && entry.headers.elementsEqual(headers) { $0.name == $1.name && $0.value == $1.value }
        }?.response
    }

    /// Keeps `response` (taking its reference) for these bytes, status and headers.
    func keep(_ response: OpaquePointer, for bytes: [UInt8], status: Int, headers: [(name: String, value: String)]) {
        if entries.count >= Self.capacity { MHD_destroy_response(entries.removeFirst().response) }
        entries.append(Entry(bytes: bytes, status: status, headers: headers, response: response))
    }
}
