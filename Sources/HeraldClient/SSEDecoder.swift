import Foundation

/// One Server-Sent Event as it came off the wire.
struct ServerSentEvent: Equatable, Sendable {
    /// The event's own `id:`, nil for one sent without (unlike a browser's `EventSource`, which gives
    /// such an event the last id: Herald's ticks and presence events have none).
    var id: String?
    var name: String
    var data: String
}

/// Splits a Server-Sent Events byte stream into events, incrementally: feed it whatever arrived and
/// it keeps the unfinished line for the next call, so a stream is never held whole. It follows the
/// WHATWG parsing rules: lines end with CRLF, LF or CR; a blank line dispatches; `id` with a NUL is
/// ignored; the last event id is set at every blank line, also one that dispatches nothing (Herald
/// sends an id-only block so that a client resumes from the start of its stream).
struct SSEDecoder {
    private var line: [UInt8] = []
    private var afterCR = false
    private var id: String?
    private var name = ""
    private var data: [UInt8] = []
    private var hasData = false
    private var sawBOM = false
    /// What to send as `Last-Event-ID` on reconnecting now.
    private(set) var lastEventID: String?
    /// The server's `retry:` in milliseconds, if it sent one.
    private(set) var retry: Int?

    init(lastEventID: String? = nil) { self.lastEventID = lastEventID }

    mutating func feed(_ data: Data, _ emit: (ServerSentEvent) -> Void) {
        data.withUnsafeBytes { feed($0, emit) }
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (ServerSentEvent) -> Void) {
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A:
                endLine(emit)
            case 0x0D:
                afterCR = true
                endLine(emit)
            default:
                line.append(byte)
            }
        }
    }

    private mutating func endLine(_ emit: (ServerSentEvent) -> Void) {
        defer { line.removeAll(keepingCapacity: true) }
        if !sawBOM {
            sawBOM = true
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        if line.isEmpty {
            dispatch(emit)
            return
        }
        if line.first == 0x3A { return }  // ":" a comment
        let colon = line.firstIndex(of: 0x3A) ?? line.endIndex
        let field = line[..<colon]
        var value = colon < line.endIndex ? line[line.index(after: colon)...] : line[line.endIndex...]
        if value.first == 0x20 { value = value.dropFirst() }
        switch String(decoding: field, as: UTF8.self) {
        case "id":
            if !value.contains(0) { id = String(decoding: value, as: UTF8.self) }
        case "event":
            name = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                retry = Int(String(decoding: value, as: UTF8.self))
            }
        default:
            break
        }
    }

    private mutating func dispatch(_ emit: (ServerSentEvent) -> Void) {
        if let id { lastEventID = id.isEmpty ? nil : id }
        if hasData {
            emit(ServerSentEvent(id: id.flatMap { $0.isEmpty ? nil : $0 }, name: name.isEmpty ? "message" : name, data: String(decoding: data, as: UTF8.self)))
        }
        id = nil
        name = ""
        data.removeAll(keepingCapacity: true)
        hasData = false
    }
}
