import CLinux
import CMicroHTTPD
import HTTPTypes
import HeraldJSON
import HeraldThreads
import Synchronization

// Answering a request: a response queued to libmicrohttpd, or a stream handed to the stream engine.
// All on the daemon's thread.
extension HTTPServer {
    /// Queues the answer to a request, with its id (`X-Request-ID`, and `requestId` in a problem
    /// document), and tells the observer; a stream is handed to the engine.
    func answer(_ response: Response, on connection: OpaquePointer, method: String, context: RequestContext,
                        chunked: Bool = false) -> MHD_Result {
        if case .eventStream(let feed) = response.body {
            let response = Self.identified(response, id: context.id)
            let framing: StreamFraming = chunked ? .chunked : .closeDelimited
            guard method == "HEAD" else {
                return handOver(feed, head: response.headers, connection: connection, framing: framing, method: method, context: context)
            }
            // The head a GET would get, and no stream: nothing is subscribed, nothing is written.
            feed.close()
            return handOver(HeadOnlyFeed(headers: response.headers, framing: framing), head: response.headers, writesHead: false,
                            connection: connection, framing: .closeDelimited, method: method, context: context)
        }
        if case .held(let held) = response.body, method != "HEAD" {
            // The engine writes the whole answer, head too, once it is ready.
            let response = Self.identified(response, id: context.id)
            return handOver(HeldFeed(held, extraHeaders: response.headers), head: response.headers, writesHead: false,
                            connection: connection, framing: .closeDelimited, method: method, context: context)
        }
        report(response.status.code, method: method, context: context, isStream: false)
        // `X-Request-ID` goes to libmicrohttpd with the other fields, not into them (an append to
        // `HTTPFields` cost more than the field).
        return queue(Self.namingRequest(response, id: context.id), on: connection, method: method, chunked: chunked, requestID: context.id)
    }

    /// Queues a quick read's answer: the fields and order `Response.json(bytes:etag:)`, the read route
    /// (`Herald-Event-ID`), CORS (`fields`) and `queue` (`X-Request-ID`) give the same read.
    func answer(_ read: QuickReads.Answer, fields: [(name: String, value: String)], on connection: OpaquePointer,
                context: RequestContext) -> MHD_Result {
        report(200, method: "GET", context: context, isStream: false)
        let kept = quickResponses.withValue { responses in
            responses.response(for: read, target: context.rawTarget, requestID: context.id) { read in
                quickResponsesMade.add(1, ordering: .relaxed)
                return Self.response(to: read, fields: fields)
            }
        }
        if let kept { return MHD_queue_response(connection, 200, kept) }
        guard let response = Self.response(to: read, fields: fields) else { return MHD_Result.NO }
        Self.add("X-Request-ID", context.id, to: response)
        let result = MHD_queue_response(connection, 200, response)
        MHD_destroy_response(response)
        return result
    }

    /// Queues the response a quick read of the same target gave in the state's present generation,
    /// if there is one (`QuickResponses.lasting`): the read's answer, unread. The caller has checked
    /// what `QuickReads.answer` checks of the head.
    func answerLasting(_ generation: UInt64, on connection: OpaquePointer, context: RequestContext) -> MHD_Result? {
        guard let (response, route) = quickResponses.withValue({ $0.lasting(for: context.rawTarget, generation: generation, requestID: context.id) })
        else { return nil }
        context.route = route
        lastingAnswers.add(1, ordering: .relaxed)
        report(200, method: "GET", context: context, isStream: false)
        return MHD_queue_response(connection, 200, response)
    }

    /// libmicrohttpd's response to a quick read, with every field but `X-Request-ID`.
    private static func response(to read: QuickReads.Answer, fields: [(name: String, value: String)]) -> OpaquePointer? {
        guard let response = response(copying: read.body) else { return nil }
        _ = MHD_add_response_header(response, "Content-Type", "application/json")
        add("ETag", read.etag, to: response)
        add("Herald-Event-ID", String(read.eventID), to: response)
        add("Cache-Control", "no-cache", to: response)
        for field in fields { field.name.withCString { add($0, field.value, to: response) } }
        return response
    }

    private func report(_ status: Int, method: String, context: RequestContext, isStream: Bool) {
        guard let observer else { return }
        observer.answered(Exchange(method: method, path: context.target?.path ?? Self.path(of: context.rawTarget), route: context.route,
                                   status: status, duration: context.startedAt.duration(to: Moment.now), requestID: context.id,
                                   client: context.client, isStream: isStream))
    }

    /// The target's path, for a request whose target did not parse: what comes before the query.
    private static func path(of target: String) -> String {
        String(target.prefix { $0 != "?" }.prefix(200))
    }

    /// `response` with `X-Request-ID` among its fields, and with `requestId` in its problem document:
    /// for a head the server writes itself (a stream's, a held request's). An answer libmicrohttpd
    /// queues gets the field from `queue` instead.
    public static func identified(_ response: consuming Response, id: String) -> Response {
        response.headers.append(HTTPField(name: .requestID, value: id))
        return namingRequest(response, id: id)
    }

    /// `response` with `requestId` in its problem document, if it is one: every problem, whoever made
    /// it, names the request the log lines name.
    static func namingRequest(_ response: consuming Response, id: String) -> Response {
        if response.status.code >= 400, case .bytes(let bytes) = response.body, bytes.last == UInt8(ascii: "}"),
           response.headers[.contentType] == "application/problem+json" {
            // The id is letters, digits and JSON-safe punctuation (`RequestIDs.isUsable`): no escaping.
            var body = Array(bytes.dropLast())
            body.append(contentsOf: (bytes.count > 2 ? #","requestId":""# : #""requestId":""#).utf8)
            body.appendUTF8(id)
            body.append(contentsOf: #""}"#.utf8)
            response.body = .bytes(body)
        }
        return response
    }

    /// Ends the request thread's hold on its wake-ups of the stream engine, sending the one it kept.
    func sendDeferredWakeup() {
        streams.release(requestHold)
    }

    func tooLarge() -> Response {
        Problem(status: .contentTooLarge, detail: "the request body is larger than \(configuration.bodyLimit) bytes").response
    }

    /// Makes libmicrohttpd's response and queues it. The body is copied: every answer carries its own
    /// request id, so a finished response is never sent twice.
    /// `requestID`: an `X-Request-ID` to send besides `response`'s fields.
    private func queue(_ response: Response, on connection: OpaquePointer, method: String, chunked: Bool = false,
                       requestID: String? = nil) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            mhdResponse = Self.response(copying: bytes)
        case .held(let held):
            // HEAD: the answer as it stands now, without waiting.
            let now = held.answer(final: true) ?? Problem(status: .internalServerError, detail: "the answer was not made").response
            held.close()
            var answer = now
            answer.headers = now.headers + response.headers
            return queue(answer, on: connection, method: method, requestID: requestID)
        case .eventStream(let feed):
            // Handed over in `answer`; one that reaches here is the handler's mistake.
            feed.close()
            return queue(Problem(status: .internalServerError, detail: "the stream was not started").response, on: connection, method: method,
                         requestID: requestID)
        case .deferred:
            // A deferred answer that is itself deferred: a handler's bug, answered plainly.
            return queue(Problem(status: .internalServerError, detail: "the answer was not made").response, on: connection, method: method,
                         requestID: requestID)
        }
        guard let mhdResponse else { return MHD_Result.NO }
        for field in response.headers { field.name.rawName.withCString { Self.add($0, field.value, to: mhdResponse) } }
        if let requestID { Self.add("X-Request-ID", requestID, to: mhdResponse) }
        let result = MHD_queue_response(connection, UInt32(response.status.code), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// libmicrohttpd's response with a copy of `bytes`.
    @inline(__always)
    private static func response(copying bytes: [UInt8]) -> OpaquePointer? {
        bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
        }
    }

    /// Adds a field to libmicrohttpd's response. `withCString` lends the value's own bytes; passing a
    /// String for `const char *` made a copy of each name and value (12 allocations for a small GET).
    /// A literal name is passed as it is.
    @inline(__always)
    private static func add(_ name: UnsafePointer<CChar>, _ value: String, to response: OpaquePointer) {
        value.withCString { _ = MHD_add_response_header(response, name, $0) }
    }

    /// Gives an SSE stream's socket to the stream engine: a second descriptor of it, the head and the
    /// first bytes (the preamble, and the snapshot or replay already queued) to write. Returning
    /// `MHD_NO` then makes libmicrohttpd drop its connection without a byte (connection.c:3070–3084,
    /// `connection_close_error`), release its memory pool, and close only its own descriptor: with
    /// `MHD_USE_TURBO` it does not `shutdown` the socket (connection.c:796), and it removes the
    /// socket from its epoll set before closing (daemon.c:3824). A request pipelined after a stream
    /// is never answered, as a stream does not end.
    /// A held request (`writesHead` false) gets no head and no preamble: its feed writes the whole answer.
    private func handOver(_ feed: any EventFeed, head headers: HTTPFields, writesHead: Bool = true, connection: OpaquePointer,
                          framing: StreamFraming, method: String, context: RequestContext) -> MHD_Result {
        let shuttingDown = draining.load(ordering: .sequentiallyConsistent)
        let socket = shuttingDown ? -1 : clinux_dup(cmhd_connection_fd(connection))
        var start = writesHead ? StreamHead.bytes(headers: headers, framing: framing) : []
        // Counted here: once the engine has the stream, its thread takes from the feed and counts too.
        var taken = 0
        // A packed replay may come as a file, sent after the head.
        var file: FileRegion?
        if socket >= 0, writesHead {
            var body = EventStream.buffer()
            body.append(contentsOf: streamPreamble)
            _ = feed.take(into: &body, limit: EventStream.laggingWriteSize, file: &file)
            taken = feed.eventsTaken
            // An empty chunk would end the body.
            if body.count > EventStream.headroom {
                let offset = EventStream.frame(&body, framing)
                start.append(contentsOf: body[offset...])
            }
        }
        var refused: StreamEngine.Refusal? = .full
        if socket >= 0 {
            do throws(StreamEngine.Refusal) {
                try streams.add(socket: socket, framing: framing, feed: feed, client: context.client, requestID: context.id,
                                path: context.target?.path ?? "-", start: start, file: file, hold: requestHold,
                                asAccepted: context.socketAsAccepted)
                report(200, method: method, context: context, isStream: method != "HEAD")
                // The first events (snapshot or replay) go out with the head.
                if let observer, taken > 0 { observer.delivered(taken) }
                return MHD_Result.NO
            } catch {
                refused = error
            }
            close(socket)
        }
        feed.close()
        let cors = HTTPFields(headers.filter { $0.name.canonicalName.hasPrefix("access-control-") })
        let refusal: Problem
        if shuttingDown || draining.load(ordering: .sequentiallyConsistent) {
            refusal = Problem(status: .serviceUnavailable, detail: "the server is shutting down; reconnect to another or later",
                              headers: [.retryAfter: "1", .connection: "close"] + cors)
        } else if refused == .clientFull {
            refusal = Problem(status: .tooManyRequests, detail: "this client holds \(configuration.streamsPerClient ?? 0) streams, as many as one "
                              + "address may; close one, or watch several subjects on one stream (/events?topic=…)",
                              headers: [.retryAfter: "5", .connection: "close"] + cors)
        } else {
            refusal = Problem(status: .serviceUnavailable, detail: "the server holds as many streams as it can; reconnect later",
                              headers: [.retryAfter: "5", .connection: "close"] + cors)
        }
        report(refusal.status.code, method: method, context: context, isStream: false)
        return queue(Self.namingRequest(refusal.response, id: context.id), on: connection, method: method, requestID: context.id)
    }
}
