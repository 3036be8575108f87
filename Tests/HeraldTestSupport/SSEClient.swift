import Foundation

// The tests' HTTP and SSE clients are hand-written on a raw socket, kept: the tests need what a client
// library hides (bytes exactly as sent, half-closes, a small receive buffer for a stalled reader, pipelined
// and malformed requests, when the head arrives). mattt/EventSource reconnects on its own over URLSession;
// an in-process router mode (as HummingbirdTesting has) would skip libmicrohttpd and the stream engine,
// which are what most of these tests are about.

/// A client of one SSE stream over a blocking socket.
public final class SSEClient {
    public let socket: Socket
    public private(set) var head: HTTPResponseParser.Head?
    public var comments: [String] { sse.comments }
    public var retry: Int? { sse.retry }
    private var http = HTTPResponseParser()
    private var sse = SSEParser()
    private var queued: [SSEEvent] = []
    /// The `ready` events the stream started with (a stream with nothing else to send first sends one,
    /// naming the id it starts after); `next` passes over them, as it is no change of any subject.
    public private(set) var readyEvents: [SSEEvent] = []
    public private(set) var ended = false

    /// Connects and sends the request; `head` is read with the first event.
    public init(port: Int, path: String, headers: [(String, String)] = [], receiveBuffer: Int32? = nil, source: String? = nil) throws {
        socket = try Socket(port: port, receiveBuffer: receiveBuffer, source: source)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try socket.send(request + "\r\n")
    }

    /// Reads until the response head is in. Returns it.
    @discardableResult
    public func awaitHead(timeout: Double = 15) throws -> HTTPResponseParser.Head {
        while head == nil {
            guard !ended else { throw TestError("the server closed the connection without an answer") }
            try pump(timeout: timeout)
        }
        guard let head else { throw TestError("no head") }
        return head
    }

    /// The next event, waiting up to `timeout` seconds.
    public func next(timeout: Double = 15) throws -> SSEEvent {
        let deadline = Date().addingTimeInterval(timeout)
        while queued.isEmpty {
            guard !ended else { throw TestError("stream ended") }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestError.timeout }
            try pump(timeout: left)
        }
        return queued.removeFirst()
    }

    /// The next `count` events.
    public func next(_ count: Int, timeout: Double = 15) throws -> [SSEEvent] {
        try (0..<count).map { _ in try next(timeout: timeout) }
    }

    /// Waits for an event named `name`, skipping others.
    public func next(named name: String, timeout: Double = 15) throws -> SSEEvent {
        while true {
            let event = try next(timeout: timeout)
            if event.event == name { return event }
        }
    }

    /// Reads until the server ends the stream (true) or `timeout` passes with it still open (false).
    public func awaitEnd(timeout: Double = 15) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !ended {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            do { try pump(timeout: left) } catch { return ended }
        }
        return true
    }

    /// Reads until `count` comments (heartbeats) have arrived in all (true), or `timeout` passes (false).
    /// Events that arrive meanwhile are kept for `next`. Silence is asserted with a marker instead: the
    /// event after it is published must be the next one read.
    public func awaitComments(_ count: Int, timeout: Double = 15) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while comments.count < count {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, !ended else { return false }
            do { try pump(timeout: left) } catch { return comments.count >= count }
        }
        return true
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
            for event in sse.feed(http.body) {
                if event.event == "ready" { readyEvents.append(event) } else { queued.append(event) }
            }
            http.body.removeAll(keepingCapacity: true)
        }
    }

    public func close() { socket.close() }

    /// Closes with a reset, as a client that vanishes does.
    public func reset() { socket.reset() }
}
