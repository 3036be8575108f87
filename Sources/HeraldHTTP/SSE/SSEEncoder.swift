import HeraldJSON

/// Writes Server-Sent Events wire format.
public enum SSEEncoder {
    /// The first bytes of every stream: a comment, so clients see the stream open at once, and the
    /// retry, in the block of the stream's first event (which follows at once: every stream starts
    /// with one). A block of `retry:` alone is an empty event to some clients (httpx-sse).
    public static func preamble(retryMilliseconds: Int) -> [UInt8] {
        Array(": herald stream\nretry: \(retryMilliseconds)\n".utf8)
    }

    /// A comment line that keeps an idle connection (and proxies) alive.
    public static let heartbeat: [UInt8] = Array(": heartbeat\n\n".utf8)

    /// The event a stream with nothing else to send first starts with, `ready`, whose data names the
    /// id it starts after: every client library records the id of an event with data (sseclient-py and
    /// launchdarkly-eventsource ignore one of a block without), so one that reconnects before the next
    /// event still sends `Last-Event-ID` and misses nothing.
    public static func position(id: String) -> [UInt8] {
        Array("id: \(id)\nevent: ready\ndata: {\"lastEventId\":\"\(id)\"}\n\n".utf8)
    }

    /// Appends one message: `id:`, `event:`, then one `data:` line per line of data.
    public static func append(_ message: SSEMessage, to out: inout [UInt8]) {
        if let id = message.id {
            out.append(contentsOf: "id: ".utf8)
            out.appendUTF8(id)
            out.append(0x0A)
        }
        if let event = message.event {
            out.append(contentsOf: "event: ".utf8)
            out.appendUTF8(event)
            out.append(0x0A)
        }
        out.append(contentsOf: "data: ".utf8)
        var start = message.data.startIndex
        // Compact JSON has no raw newline; a line break in other data starts a new data line.
        while let newline = message.data[start...].firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) {
            out.append(contentsOf: message.data[start..<newline])
            out.append(contentsOf: "\ndata: ".utf8)
            start = message.data.index(after: newline)
            if message.data[newline] == 0x0D, start < message.data.endIndex, message.data[start] == 0x0A {
                start = message.data.index(after: start)
            }
        }
        out.append(contentsOf: message.data[start...])
        out.append(contentsOf: "\n\n".utf8)
    }

    public static func encode(_ message: SSEMessage) -> [UInt8] {
        var out: [UInt8] = []
        // One allocation for the usual message (compact JSON: one data line).
        out.reserveCapacity(message.data.count + (message.id?.utf8.count ?? 0) + (message.event?.utf8.count ?? 0) + 23)
        append(message, to: &out)
        return out
    }
}
