public import HTTPTypes
public import HeraldJSON

/// An HTTP response: a complete body, or a Server-Sent Events stream.
public struct Response: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        case eventStream(any EventFeed)
        /// An answer that waits for something to happen (`HeldRequest`), on the stream engine.
        case held(any HeldRequest)
        /// An answer made on another thread (a change waiting for the writer): the connection waits,
        /// suspended, while the thread that serves every other request goes on. The final response
        /// gets this response's headers too (CORS adds them on the way out).
        case deferred(Deferred)
    }

    /// How a deferred answer is made: `start` is called once, on the server's thread, with a function
    /// that takes the answer; that function may be called on any thread, exactly once.
    public struct Deferred: Sendable {
        public let start: @Sendable (_ answer: @escaping @Sendable (Response) -> Void) -> Void

        public init(start: @escaping @Sendable (_ answer: @escaping @Sendable (Response) -> Void) -> Void) {
            self.start = start
        }
    }

    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: Body
    /// The pattern of the route that made it (`/auctions/{id}`), set by the router; for metrics and logs.
    public var route: String?

    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        // Room for what the way out adds (`Herald-Event-ID`, CORS's two, `X-Request-ID`): each of them
        // grew the fields' storage by one, a copy each time.
        self.headers.reserveCapacity(headers.count + Self.addedOnTheWayOut)
        self.body = body
    }

    /// Header fields the server may add to a handler's response.
    static let addedOnTheWayOut = 5

    /// A JSON response.
    public static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers.isEmpty ? jsonHeaders : jsonHeaders + headers, body: .bytes(value.bytes))
    }

    /// A JSON response with its entity tag, its fields made in one go with room for what the way out
    /// adds (a dictionary literal joined to `jsonHeaders` cost 5 % of a small GET).
    public static func json(bytes: [UInt8], etag: String, status: HTTPResponse.Status = .ok, headers more: HTTPFields = [:]) -> Response {
        var headers = HTTPFields()
        headers.reserveCapacity(2 + more.count + addedOnTheWayOut)
        headers.append(jsonContentType)
        headers.append(contentsOf: more)
        headers.append(HTTPField(name: .eTag, value: etag))
        return Response(status: status, headers: headers, body: .bytes(bytes))
    }

    /// `value` as a JSON response with its entity tag.
    public static func json(_ value: JSONValue, etag: String, status: HTTPResponse.Status = .ok) -> Response {
        json(bytes: value.bytes, etag: etag, status: status)
    }

    static let jsonContentType = HTTPField(name: .contentType, value: "application/json")

    /// An answer given later, from any thread, through the function `start` receives.
    public static func later(_ start: @escaping @Sendable (_ answer: @escaping @Sendable (Response) -> Void) -> Void) -> Response {
        Response(status: 0, body: .deferred(Deferred(start: start)))
    }

    /// `Content-Type: application/json`, made once.
    public static let jsonHeaders = HTTPFields([jsonContentType])

    /// A response with no body.
    public static func empty(status: HTTPResponse.Status, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers)
    }

    /// A text response of the given type.
    public static func text(_ text: String, contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: contentType], body: .bytes(Array(text.utf8)))
    }

    /// An SSE stream fed by `feed`. Headers say not to cache or buffer it.
    public static func eventStream(_ feed: any EventFeed) -> Response {
        Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store", .xAccelBuffering: "no"],
                 body: .eventStream(feed))
    }

    /// The value of header `name`; several fields of that name are joined with commas (RFC 9110 §5.3),
    /// so a repeated `Authorization` or `Idempotency-Key` reads as no valid one.
    public func header(_ name: HTTPField.Name) -> String? { headers[name] }
}

extension HTTPFields {
    /// The fields of both, in order: `lhs`'s first.
    public static func + (lhs: HTTPFields, rhs: HTTPFields) -> HTTPFields {
        var fields = lhs
        fields.reserveCapacity(lhs.count + rhs.count + Response.addedOnTheWayOut)
        fields.append(contentsOf: rhs)
        return fields
    }
}
