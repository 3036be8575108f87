import CLinux
import CMicroHTTPD
import HeraldThreads
import HTTPTypes
import Synchronization

// Reading a request: its head checked before the body, its body gathered, then the handler's answer.
// All on the daemon's thread, from `accessCallback`.
extension HTTPServer {
    func handle(
        connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>, context contextPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        // The target callback always made the context; without one, close.
        guard let raw = contextPointer.pointee else { return MHD_Result.NO }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        // Read once, in the first call (a C string made a Swift one at every call).
        let methodName = context.started ? context.method : Self.string(method, commonly: Self.commonMethods)
        if !context.started {
            // First call, head only. A response queued now, before libmicrohttpd has read the body,
            // ends the connection after it (no keep-alive), so only a refusal is answered now: its
            // connection closes, and no byte after the head is read.
            context.started = true
            context.startedAt = Moment.now
            context.method = methodName
            let versionName = Self.string(version, commonly: Self.commonVersions)
            context.http11 = versionName == "HTTP/1.1"
            let arrival = connections.headReceived(connection)
            // Into the context's own array, which a kept context brings with its memory.
            Self.values(connection, MHD_ValueKind.HEADER_KIND, into: &context.received)
            let head = context.received
            context.id = requestIDs.id(for: Self.first("x-request-id", in: head))
            context.client = client(of: connection, peer: arrival?.address, context: context)
            // Its socket's options are as accepted (Nagle off, never corked) while nothing was answered on it.
            context.socketAsAccepted = arrival?.answered == false && acceptsWithoutDelay.load(ordering: .relaxed)
            if cmhd_head_hides_bytes(connection, method, version) != 0 {
                // RFC 9110 §5.5: a value with NUL (read up to it, `Content-Length: 2\0NN` is 2), CR or
                // LF would be read one way here and another by a proxy in front.
                let problem = Problem(status: .badRequest, detail: "a header field holds a NUL, CR or line break, or is folded over two lines",
                                      headers: [.connection: "close"])
                return answer(problem.response, on: connection, method: methodName, context: context)
            }
            if context.rawTarget.utf8.count > configuration.targetBytesLimit {
                let problem = Problem(status: .uriTooLong, detail: "the request target is longer than \(configuration.targetBytesLimit) bytes",
                                      headers: [.connection: "close"])
                return answer(problem.response, on: connection, method: methodName, context: context)
            }
            if Self.size(of: head) > configuration.headerBytesLimit {
                let problem = Problem(status: .requestHeaderFieldsTooLarge, detail: "the request's header fields are larger than \(configuration.headerBytesLimit) bytes",
                                      headers: [.connection: "close"])
                return answer(problem.response, on: connection, method: methodName, context: context)
            }
            let declaredLength: Int?
            do throws(Problem) {
                let target = try RequestTarget(context.rawTarget)
                // RFC 9112 §3.2.4: the asterisk form is for OPTIONS only (GET * answered the page).
                if context.rawTarget == "*", methodName != "OPTIONS" {
                    throw Problem(status: .badRequest, detail: "the request target * is for OPTIONS only")
                }
                context.target = target
                declaredLength = try guardState.withLock { requestGuard throws(Problem) in
                    try requestGuard.check(version: versionName, headers: head, authority: target.authority)
                }
            } catch {
                var response = error.response
                if response.headers[.connection] == nil { response.headers[.connection] = "close" }
                return answer(response, on: connection, method: methodName, context: context)
            }
            if let declaredLength, declaredLength > configuration.bodyLimit {
                return answer(tooLarge(), on: connection, method: methodName, context: context)
            }
            if (declaredLength ?? 0) > 0 || Self.first("transfer-encoding", in: head) != nil {
                context.bodyDue = true
                connections.bodyDue(connection)
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
        if context.bodyDue {
            // The body is in: answering it (perhaps after the writer) is not the client's time.
            context.bodyDue = false
            connections.headReceived(connection)
        }
        let http11 = context.http11
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
        if let quickReads, methodName == "GET", QuickReads.mayAnswer(context.received) {
            // A target read before in this generation of the state (even: no change is becoming
            // visible) is answered as it was then, without reading again.
            if let generation = quickReads.generation?(), generation & 1 == 0,
               let result = answerLasting(generation, on: connection, context: context) {
                quickAnswers.add(1, ordering: .relaxed)
                return result
            }
            if let read = quickReads.answer(target) {
                context.route = read.route
                quickAnswers.add(1, ordering: .relaxed)
                return answer(read, fields: quickReads.fields, on: connection, context: context)
            }
        }
        // The stream engine is woken once this answer is out (in the completed callback), not while
        // it is made: on a shared core, a fan-out started mid-request would delay the answer.
        requestHold.begin()
        guard let typedMethod = HTTPRequest.Method(methodName) else {
            let problem = Problem(status: .badRequest, detail: "the method is not a token", headers: [.connection: "close"])
            return answer(problem.response, on: connection, method: methodName, context: context)
        }
        let request = Request(
            method: typedMethod, path: target.path, segments: target.segments,
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

    /// The connection's peer, or behind a trusted proxy the client it forwards for.
    private func client(of connection: OpaquePointer, peer known: String?, context: RequestContext) -> String {
        let peer = known ?? Self.peer(of: connection)
        guard !clients.trustedProxies.isEmpty else { return peer }
        return clients.client(peer: peer, forwardedFor: context.head[values: .xForwardedFor])
    }

    static let commonMethods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    static let commonVersions = ["HTTP/1.1", "HTTP/1.0"]

    /// A C string as a Swift one: one of `common` when it is one (compared byte for byte, then shared:
    /// no check of its UTF-8 and no copy), else made.
    static func string(_ text: UnsafePointer<CChar>?, commonly common: [String]) -> String {
        guard let text else { return "" }
        for candidate in common {
            var candidate = candidate
            let same = candidate.withUTF8 { bytes in
                // `strncmp` stops at `text`'s end: when the bytes match, `text` is at least as long.
                guard let base = bytes.baseAddress else { return false }
                return strncmp(text, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), bytes.count) == 0 && text[bytes.count] == 0
            }
            if same { return candidate }
        }
        return String(cString: text)
    }

    /// The head's size as the limit counts it: each name and value, and four bytes for `: ` and CRLF.
    static func size(of received: [(name: String, value: String)]) -> Int {
        var size = 0
        for index in received.indices { size += received[index].name.utf8.count + received[index].value.utf8.count + 4 }
        return size
    }

    /// The first value of the field `name` (in lower case) as received, its name matched without
    /// regard to case, as `HTTPFields` matches names.
    static func first(_ name: StaticString, in received: [(name: String, value: String)]) -> String? {
        // By index: the fields are looked at where they are, not copied out (a retain and a release
        // of each string, for every field, at each of a request's four looks).
        // The lengths first, here: nearly every field differs from `name` in length.
        for index in received.indices where received[index].name.utf8.count == name.utf8CodeUnitCount
            && RequestGuard.equalsIgnoringCase(received[index].name, name) {
            return received[index].value
        }
        return nil
    }

    /// The head's fields, typed. A name that is not a token is left out here: `RequestGuard`, which
    /// reads the head as received, refuses that request.
    static func fields(_ head: [(name: String, value: String)]) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(head.count)
        for (name, value) in head {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return fields
    }

    /// Every key/value pair of one kind (headers, query arguments), in order, added to `pairs`.
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, into pairs: inout [(name: String, value: String)]) {
        if pairs.capacity == 0 { pairs.reserveCapacity(8) }
        withUnsafeMutablePointer(to: &pairs) { pointer in
            _ = MHD_get_connection_values(connection, kind, { cls, _, key, value in
                guard let cls, let key else { return MHD_Result.YES }
                let pairs = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
                pairs.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return MHD_Result.YES
            }, pointer)
        }
    }
}
