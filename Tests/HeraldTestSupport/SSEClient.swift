import Foundation

/// One Server-Sent Event as a client sees it.
public struct SSEEvent: Sendable, Equatable {
    public var id: String?
    public var event: String?
    public var data: String

    /// `data` parsed as a JSON object.
    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
    }

    public static func == (lhs: SSEEvent, rhs: SSEEvent) -> Bool {
        lhs.id == rhs.id && lhs.event == rhs.event && lhs.data == rhs.data
    }
}

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

/// A client of one SSE stream over a blocking socket.
public final class SSEClient {
    public let socket: Socket
    public private(set) var head: HTTPResponseParser.Head?
    public var comments: [String] { sse.comments }
    public var retry: Int? { sse.retry }
    private var http = HTTPResponseParser()
    private var sse = SSEParser()
    private var ready: [SSEEvent] = []
    public private(set) var ended = false

    /// Connects and sends the request; `head` is read with the first event.
    public init(port: Int, path: String, headers: [(String, String)] = [], receiveBuffer: Int32? = nil) throws {
        socket = try Socket(port: port, receiveBuffer: receiveBuffer)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try socket.send(request + "\r\n")
    }

    /// Reads until the response head is in. Returns it.
    @discardableResult
    public func awaitHead(timeout: Double = 5) throws -> HTTPResponseParser.Head {
        while head == nil { try pump(timeout: timeout) }
        guard let head else { throw TestError("no head") }
        return head
    }

    /// The next event, waiting up to `timeout` seconds.
    public func next(timeout: Double = 5) throws -> SSEEvent {
        let deadline = Date().addingTimeInterval(timeout)
        while ready.isEmpty {
            guard !ended else { throw TestError("stream ended") }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestError.timeout }
            try pump(timeout: left)
        }
        return ready.removeFirst()
    }

    /// The next `count` events.
    public func next(_ count: Int, timeout: Double = 5) throws -> [SSEEvent] {
        try (0..<count).map { _ in try next(timeout: timeout) }
    }

    /// Waits for an event named `name`, skipping others.
    public func next(named name: String, timeout: Double = 5) throws -> SSEEvent {
        while true {
            let event = try next(timeout: timeout)
            if event.event == name { return event }
        }
    }

    /// Reads until the server ends the stream (true) or `timeout` passes with it still open (false).
    public func awaitEnd(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !ended {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            do { try pump(timeout: left) } catch { return ended }
        }
        return true
    }

    /// Whether anything but comments arrives within `timeout` (for asserting silence).
    public func receivesEvent(within timeout: Double) -> Bool {
        (try? next(timeout: timeout)) != nil
    }

    private func pump(timeout: Double) throws {
        socket.setTimeout(max(timeout, 0.01))
        let bytes = try socket.receive()
        if bytes.isEmpty {
            ended = true
            return
        }
        try http.feed(bytes)
        if head == nil { head = http.head }
        if http.complete { ended = true }
        if !http.body.isEmpty {
            ready.append(contentsOf: sse.feed(http.body))
            http.body.removeAll(keepingCapacity: true)
        }
    }

    public func close() { socket.close() }
}
