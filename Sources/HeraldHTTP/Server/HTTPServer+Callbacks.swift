import CLinux
import CMicroHTTPD
import Foundation
import HeraldJSON
import Logging

// libmicrohttpd's callbacks. They capture nothing: the server comes through `cls` with `Unmanaged`,
// the request's state through `con_cls`. All run on the daemon's thread.
extension HTTPServer {
    static let accessCallback: MHD_AccessHandlerCallback = { cls, connection, _, method, version, uploadData, uploadSize, contextPointer in
        guard let cls, let connection, let contextPointer, let uploadSize else { return MHD_Result.NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        return server.handle(connection: connection, method: method, version: version,
                             upload: uploadData, uploadSize: uploadSize, context: contextPointer)
    }

    static let completedCallback: MHD_RequestCompletedCallback = { cls, connection, contextPointer, _ in
        if let cls {
            let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
            server.sendDeferredWakeup()
            if let connection {
                let idle = server.configuration.connectionTimeout
                server.headDeadlines.requestCompleted(connection, idle: idle > 0 ? .seconds(idle) : nil)
            }
        }
        guard let contextPointer, let raw = contextPointer.pointee else { return }
        Unmanaged<RequestContext>.fromOpaque(raw).release()
        contextPointer.pointee = nil
    }

    /// Runs first for every request, with the target as the client sent it: keeps a copy, and keeps
    /// libmicrohttpd from storing the query arguments (Herald parses them from the copy).
    static let targetCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { cls, uri, connection in
        if let cls {
            let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
            server.sendDeferredWakeup()
            if let connection { server.headDeadlines.requestLine(connection) }
        }
        let raw = uri.map { String(cString: $0) } ?? ""
        if let uri { cmhd_drop_query_arguments(uri) }
        return Unmanaged.passRetained(RequestContext(rawTarget: raw)).toOpaque()
    }

    /// Each accepted socket, before it becomes a connection: an address past its rate of new
    /// connections is closed unanswered (daemon.c:2480). Trusted proxies carry many clients and pass.
    static let acceptCallback: MHD_AcceptPolicyCallback = { cls, address, _ in
        guard let cls else { return MHD_Result.YES }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        guard let limiter = server.connectionRate, let peer = address.flatMap(HTTPServer.text(of:)), !server.clients.isTrusted(peer)
        else { return MHD_Result.YES }
        guard limiter.take(peer) == nil else {
            server.logger.debug("connection refused: too many new connections", metadata: ["http.client": "\(peer)"])
            return MHD_Result.NO
        }
        return MHD_Result.YES
    }

    /// A connection starts (its head is due) or is closed (before its socket is: daemon.c:3799).
    static let connectionCallback: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        guard let cls, let connection else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        if code.rawValue == 0 { // MHD_CONNECTION_NOTIFY_STARTED
            let socket = cmhd_connection_fd(connection)
            if socket >= 0 { server.headDeadlines.started(connection, socket: socket) }
        } else {
            server.headDeadlines.closed(connection)
        }
    }

    /// An address as text (`cmhd_format_address`), or nil.
    static func text(of address: UnsafePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        guard cmhd_format_address(address, &buffer, buffer.count) == 0 else { return nil }
        return Self.string(buffer)
    }

    /// A NUL-terminated C string in a buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The connection's peer, or behind a trusted proxy the client it forwards for.
    private func client(of connection: OpaquePointer, head: [(name: String, value: String)]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let peer = cmhd_client_address(connection, &buffer, buffer.count) == 0 ? Self.string(buffer) : "-"
        guard !clients.trustedProxies.isEmpty else { return peer }
        let forwarded = head.filter { $0.name.lowercased() == "x-forwarded-for" }.map(\.value)
        return clients.client(peer: peer, forwardedFor: forwarded)
    }

    private func handle(
        connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>, context contextPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        // The target callback always made the context; without one, close.
        guard let raw = contextPointer.pointee else { return MHD_Result.NO }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        let methodName = method.map { String(cString: $0) } ?? ""
        if !context.started {
            // First call, head only. Queueing a response now costs keep-alive (see shared notes), so only
            // a refusal is answered now: its connection closes, and no byte after the head is read.
            context.started = true
            context.startedAt = .now
            headDeadlines.headReceived(connection)
            let head = Self.values(connection, MHD_ValueKind.HEADER_KIND)
            context.head = head
            context.id = requestIDs.id(for: head.first { $0.name.lowercased() == "x-request-id" }?.value)
            context.client = client(of: connection, head: head)
            if context.rawTarget.utf8.count > configuration.targetBytesLimit {
                let problem = Problem(status: 414, detail: "the request target is longer than \(configuration.targetBytesLimit) bytes",
                                      headers: [("Connection", "close")])
                return answer(problem.response, on: connection, method: methodName, context: context)
            }
            if head.reduce(0, { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }) > configuration.headerBytesLimit {
                let problem = Problem(status: 431, detail: "the request's header fields are larger than \(configuration.headerBytesLimit) bytes",
                                      headers: [("Connection", "close")])
                return answer(problem.response, on: connection, method: methodName, context: context)
            }
            let declaredLength: Int?
            do throws(Problem) {
                let target = try RequestTarget(context.rawTarget)
                context.target = target
                declaredLength = try requestGuard.check(version: version.map { String(cString: $0) } ?? "", headers: head,
                                                        authority: target.authority)
            } catch {
                var response = error.response
                if response.header("Connection") == nil { response.headers.append(("Connection", "close")) }
                return answer(response, on: connection, method: methodName, context: context)
            }
            if let declaredLength, declaredLength > configuration.bodyLimit {
                return answer(tooLarge(), on: connection, method: methodName, context: context)
            }
            return MHD_Result.YES
        }
        if uploadSize.pointee > 0 {
            if !context.tooLarge, let upload {
                if context.body.count + uploadSize.pointee > configuration.bodyLimit {
                    context.tooLarge = true
                    context.body = []
                } else {
                    upload.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        context.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return MHD_Result.YES
        }
        let http11 = version.map { String(cString: $0) == "HTTP/1.1" } ?? false
        if let pending = context.pending {
            // Resumed: the deferred answer is ready (libmicrohttpd calls again only after a resume).
            guard let answer = pending.take() else {
                MHD_suspend_connection(connection)
                return MHD_Result.YES
            }
            context.pending = nil
            return self.answer(answer, on: connection, method: methodName, context: context, chunked: http11)
        }
        if context.tooLarge { return answer(tooLarge(), on: connection, method: methodName, context: context) }
        guard let target = context.target else { return MHD_Result.NO }
        // The stream engine is woken once this answer is out (in the completed callback), not while
        // it is made: on a shared core, a fan-out started mid-request would delay the answer.
        clinux_defer_wakeups()
        let request = Request(
            method: methodName, path: target.path, segments: target.segments,
            query: target.query.map { ($0.name, $0.value) },
            headers: context.head,
            body: context.body, id: context.id, client: context.client)
        let response = handler(request)
        context.route = response.route
        if case .deferred(let deferred) = response.body {
            // Suspended before the answer can come, so the resume always finds it suspended.
            let pending = PendingAnswer(connection: connection, headers: response.headers)
            context.pending = pending
            MHD_suspend_connection(connection)
            deferred.start { pending.give($0) }
            sendDeferredWakeup()
            return MHD_Result.YES
        }
        return answer(response, on: connection, method: methodName, context: context, chunked: http11)
    }

    /// Queues the answer to a request, with its id (`X-Request-ID`, and `requestId` in a problem
    /// document), and tells the observer; a stream is handed to the engine.
    private func answer(_ response: Response, on connection: OpaquePointer, method: String, context: RequestContext,
                        chunked: Bool = false) -> MHD_Result {
        let response = Self.identified(response, id: context.id)
        if case .eventStream(let feed) = response.body, method != "HEAD" {
            return handOver(feed, head: response.headers, connection: connection, framing: chunked ? .chunked : .closeDelimited,
                            method: method, context: context)
        }
        report(response.status, method: method, context: context, isStream: false)
        return queue(response, on: connection, method: method, chunked: chunked)
    }

    private func report(_ status: Int, method: String, context: RequestContext, isStream: Bool) {
        guard let observer else { return }
        observer.answered(Exchange(method: method, path: context.target?.path ?? Self.path(of: context.rawTarget), route: context.route,
                                   status: status, duration: context.startedAt.duration(to: .now), requestID: context.id,
                                   client: context.client, isStream: isStream))
    }

    /// The target's path, for a request whose target did not parse: what comes before the query.
    private static func path(of target: String) -> String {
        String(target.prefix { $0 != "?" }.prefix(200))
    }

    /// `response` with `X-Request-ID`, and with `requestId` in its problem document: every problem,
    /// whoever made it, names the request the log lines name.
    public static func identified(_ response: Response, id: String) -> Response {
        var response = response
        response.headers.append(("X-Request-ID", id))
        if response.status >= 400, case .bytes(let bytes) = response.body, bytes.last == UInt8(ascii: "}"),
           response.header("Content-Type") == "application/problem+json" {
            // The id is letters, digits and JSON-safe punctuation (`RequestIDs.isUsable`): no escaping.
            var body = Array(bytes.dropLast())
            body.append(contentsOf: (bytes.count > 2 ? #","requestId":""# : #""requestId":""#).utf8)
            body.append(contentsOf: id.utf8)
            body.append(contentsOf: #""}"#.utf8)
            response.body = .bytes(body)
        }
        return response
    }

    /// Sends the stream engine the wake-up this thread deferred while answering, if any.
    func sendDeferredWakeup() {
        if clinux_end_deferral() != 0 { streams.signal() }
    }

    private func tooLarge() -> Response {
        Problem(status: 413, detail: "the request body is larger than \(configuration.bodyLimit) bytes").response
    }

    /// Makes libmicrohttpd's response and queues it. The body is copied: every answer carries its own
    /// request id, so a finished response is never sent twice.
    private func queue(_ response: Response, on connection: OpaquePointer, method: String, chunked: Bool = false) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .eventStream(let feed) where method == "HEAD":
            // The head a GET would get, and no stream: nothing is subscribed, nothing is written.
            feed.close()
            mhdResponse = MHD_create_response_from_buffer(0, nil, MHD_ResponseMemoryMode.RESPMEM_PERSISTENT)
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
        case .eventStream(let feed):
            // Handed over in `answer`; one that reaches here is the handler's mistake.
            feed.close()
            return queue(Problem(status: 500, detail: "the stream was not started").response, on: connection, method: method)
        case .deferred:
            // A deferred answer that is itself deferred: a handler's bug, answered plainly.
            return queue(Problem(status: 500, detail: "the answer was not made").response, on: connection, method: method)
        }
        guard let mhdResponse else { return MHD_Result.NO }
        for header in response.headers {
            _ = MHD_add_response_header(mhdResponse, header.name, header.value)
        }
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// Gives an SSE stream's socket to the stream engine: a second descriptor of it, the head and the
    /// first bytes (the preamble, and the snapshot or replay already queued) to write. Returning
    /// `MHD_NO` then makes libmicrohttpd drop its connection without a byte (connection.c:3070–3084,
    /// `connection_close_error`), release its memory pool, and close only its own descriptor: with
    /// `MHD_USE_TURBO` it does not `shutdown` the socket (connection.c:796), and it removes the
    /// socket from its epoll set before closing (daemon.c:3824). A request pipelined after a stream
    /// is never answered, as a stream does not end.
    private func handOver(_ feed: any EventFeed, head headers: [(name: String, value: String)], connection: OpaquePointer,
                          framing: StreamFraming, method: String, context: RequestContext) -> MHD_Result {
        let shuttingDown = draining.load(ordering: .sequentiallyConsistent)
        let socket = shuttingDown ? -1 : clinux_dup(cmhd_connection_fd(connection))
        var start = StreamHead.bytes(headers: headers, framing: framing)
        if socket >= 0 {
            var body = EventStream.buffer()
            body.append(contentsOf: SSEEncoder.preamble(retryMilliseconds: configuration.retryMilliseconds))
            _ = feed.take(into: &body, limit: EventStream.writeSize)
            let offset = EventStream.frame(&body, framing)
            start.append(contentsOf: body[offset...])
        }
        var refused: StreamEngine.Refusal? = .full
        if socket >= 0 {
            do throws(StreamEngine.Refusal) {
                try streams.add(socket: socket, framing: framing, feed: feed, client: context.client, requestID: context.id,
                                path: context.target?.path ?? "-", start: start)
                report(200, method: method, context: context, isStream: true)
                // The first events (snapshot or replay) go out with the head.
                if let observer, feed.eventsTaken > 0 { observer.delivered(feed.eventsTaken) }
                return MHD_Result.NO
            } catch {
                refused = error
            }
            close(socket)
        }
        feed.close()
        let cors = headers.filter { $0.name.hasPrefix("Access-Control") }
        let refusal: Problem
        if shuttingDown || draining.load(ordering: .sequentiallyConsistent) {
            refusal = Problem(status: 503, detail: "the server is shutting down; reconnect to another or later",
                              headers: [("Retry-After", "1"), ("Connection", "close")] + cors)
        } else if refused == .clientFull {
            refusal = Problem(status: 429, detail: "this client holds \(configuration.streamsPerClient ?? 0) streams, as many as one "
                              + "address may; close one, or watch several subjects on one stream (/events?topic=…)",
                              headers: [("Retry-After", "5")] + cors)
        } else {
            refusal = Problem(status: 503, detail: "the server holds as many streams as it can; reconnect later",
                              headers: [("Retry-After", "5")] + cors)
        }
        let answer = Self.identified(refusal.response, id: context.id)
        report(answer.status, method: method, context: context, isStream: false)
        return queue(answer, on: connection, method: method)
    }

    /// Every key/value pair of one kind (headers, query arguments), in order.
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &pairs) { pointer in
            _ = MHD_get_connection_values(connection, kind, { cls, _, key, value in
                guard let cls, let key else { return MHD_Result.YES }
                let pairs = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
                pairs.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return MHD_Result.YES
            }, pointer)
        }
        return pairs
    }
}
