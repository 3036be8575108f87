import Foundation

/// Splits an SSE byte stream into events, following the WHATWG parsing rules for the fields used here.
public struct SSEParser {
    private var line: [UInt8] = []
    private var current = SSEEvent(id: nil, event: nil, data: "")
    private var hasData = false
    public private(set) var comments: [String] = []
    public private(set) var retry: Int?
    /// What a browser would send as `Last-Event-ID` on reconnecting now.
    public private(set) var lastEventId: String?

    public init() {}

    public mutating func feed(_ bytes: [UInt8]) -> [SSEEvent] {
        var events: [SSEEvent] = []
        for byte in bytes {
            if byte != 0x0A {
                line.append(byte)
                continue
            }
            if line.last == 0x0D { line.removeLast() }
            let text = String(decoding: line, as: UTF8.self)
            line.removeAll(keepingCapacity: true)
            if text.isEmpty {
                // WHATWG: the last event id is set at every blank line, even one that dispatches nothing.
                if let id = current.id { lastEventId = id }
                if hasData || current.event != nil { events.append(current) }
                current = SSEEvent(id: nil, event: nil, data: "")
                hasData = false
            } else if text.hasPrefix(":") {
                comments.append(String(text.dropFirst()).trimmingCharacters(in: .whitespaces))
            } else {
                let (field, value) = Self.split(text)
                switch field {
                case "id": current.id = value
                case "event": current.event = value
                case "data":
                    current.data += hasData ? "\n" + value : value
                    hasData = true
                case "retry": retry = Int(value)
                default: break
                }
            }
        }
        return events
    }

    private static func split(_ line: String) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        var value = line[line.index(after: colon)...]
        if value.first == " " { value = value.dropFirst() }
        return (String(line[..<colon]), String(value))
    }
}
