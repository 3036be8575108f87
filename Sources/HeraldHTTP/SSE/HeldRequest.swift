public import Foundation
public import HTTPTypes

/// A request whose answer waits for something to happen (a long-poll): the stream engine keeps its
/// socket, as it keeps a stream's, and writes the answer when `answer(final:)` has one. Held by
/// libmicrohttpd instead, the connection would keep its whole memory pool (16 KiB) while it waits.
public protocol HeldRequest: AnyObject, Sendable {
    /// The answer, once there is one (nil: wait on). With `final` (the wait ran out, or the server
    /// stops), the answer to give now. Its body must be `.bytes`.
    func answer(final: Bool) -> Response?
    /// Sets the function to call when an answer may be ready (`false`), or when nothing will come
    /// (`true`). It may be called from any thread.
    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void)
    /// The request is over (answered, or its client left): release what it holds. Called once.
    func close()
    /// When the wait runs out.
    var until: Date { get }
    /// Whether its wait has run out (then its stream's end is counted as `waitEnded`).
    var waitRanOut: Bool { get }
}

extension Response {
    /// An answer that waits, on the stream engine, until `held` has it.
    public static func held(_ held: any HeldRequest, headers: HTTPFields = [:]) -> Response {
        Response(status: .ok, headers: headers, body: .held(held))
    }

    /// The whole response as it goes on the wire: status line, `Date`, headers, `Content-Length` and
    /// `Connection: close` (a held request's connection is the engine's, which ends it after the answer).
    func wireBytes(extraHeaders: HTTPFields) -> [UInt8] {
        let body: [UInt8] = if case .bytes(let bytes) = body { bytes } else { [] }
        let fields = HTTPFields((headers + extraHeaders).filter { $0.name != .contentLength && $0.name != .connection })
        return StreamHead.bytes(status: status, headers: fields, framing: "Content-Length: \(body.count)\r\nConnection: close") + body
    }
}

/// A held request as the stream engine's feed: nothing to write until the answer, then the whole
/// response and the end; no heartbeats, which would be bytes before the answer's head.
final class HeldFeed: EventFeed, @unchecked Sendable {
    // Unchecked: made on the server's thread, then used only by the engine's (handed over with its stream).
    private let held: any HeldRequest
    /// Headers the server adds to every answer (the request's id, CORS).
    private let extraHeaders: HTTPFields
    private var answered = false

    init(_ held: any HeldRequest, extraHeaders: HTTPFields) {
        self.held = held
        self.extraHeaders = extraHeaders
    }

    func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
        guard !answered else { return .finished }
        guard let response = held.answer(final: false) else { return .idle }
        answered = true
        out.append(contentsOf: response.wireBytes(extraHeaders: extraHeaders))
        return .complete
    }

    func last(into out: inout [UInt8]) {
        guard !answered, let response = held.answer(final: true) else { return }
        answered = true
        out.append(contentsOf: response.wireBytes(extraHeaders: extraHeaders))
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) { held.setWaker(waker) }
    func close() { held.close() }
    var expires: Date? { held.until }
    var heartbeats: Bool { false }
    var ending: StreamSummary.End? { held.waitRanOut ? .waitEnded : nil }
    var eventsTaken: Int { answered ? 1 : 0 }
}
