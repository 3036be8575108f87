import HTTPTypes

/// What the server keeps for one request between libmicrohttpd's calls: the target as sent and the
/// body read so far. Taken by the URI callback, given back by the completion callback
/// (`RequestContexts`: a finished request's context, reset, serves a later one).
///
/// Its properties skip Swift's dynamic exclusivity check (two runtime calls at each access, about 100
/// instructions, nine times a request): only the request thread touches a context, in libmicrohttpd's
/// callbacks, and no access to one of them is ever open while another to the same starts.
final class RequestContext {
    /// The request target exactly as the client sent it (path and query, not yet decoded).
    @exclusivity(unchecked) private(set) var rawTarget: String
    /// The target, parsed in the first call.
    @exclusivity(unchecked) var target: RequestTarget?
    /// The header fields as received, read in the first call (`RequestGuard` checks them so).
    @exclusivity(unchecked) var received: [(name: String, value: String)] = []
    /// The header fields, typed when first asked for: a quick read never needs them.
    var head: HTTPFields {
        if let typedHead { return typedHead }
        let fields = HTTPServer.fields(received)
        typedHead = fields
        return fields
    }
    @exclusivity(unchecked) private var typedHead: HTTPFields?
    /// The client's address (see `ClientResolver`), read with the head.
    @exclusivity(unchecked) var client = "-"
    /// The socket's options are still as accepted: a stream need not set them again.
    @exclusivity(unchecked) var socketAsAccepted = false
    /// The access handler has seen the head (its first call is over).
    @exclusivity(unchecked) var started = false
    /// The method and whether the version is HTTP/1.1, read in the first call.
    @exclusivity(unchecked) var method = ""
    @exclusivity(unchecked) var http11 = false
    /// When the head was read: a request's duration is counted from here (set with the head; before
    /// it, the process's start, which costs no reading of the clock).
    @exclusivity(unchecked) var startedAt = RequestContext.processStart
    /// The request's id: the client's `X-Request-ID`, or one made (see `RequestIDs`).
    @exclusivity(unchecked) var id = "-"
    /// The pattern of the route that answered, once one did.
    @exclusivity(unchecked) var route: String?
    @exclusivity(unchecked) var body: [UInt8] = []
    /// The body passed the limit: the rest is read and dropped, and the answer is 413.
    @exclusivity(unchecked) var tooLarge = false
    /// A body was declared and its deadline set (`ConnectionTable.bodyDue`); cleared once it is in.
    @exclusivity(unchecked) var bodyDue = false
    /// Set while the connection is suspended for a deferred answer.
    @exclusivity(unchecked) var pending: PendingAnswer?

    init(rawTarget: String) { self.rawTarget = rawTarget }

    /// Makes the context as new for another request's `rawTarget`. Every stored property is set here
    /// (`RequestContextTests` lists them, so a new one fails it until it is), and the arrays keep
    /// their memory: the next head's fields and a body up to `keptBodyBytes` need no allocation.
    func reset(rawTarget: String) {
        self.rawTarget = rawTarget
        target = nil
        received.removeAll(keepingCapacity: true)
        typedHead = nil
        client = "-"
        socketAsAccepted = false
        started = false
        method = ""
        http11 = false
        startedAt = Self.processStart
        id = "-"
        route = nil
        if body.capacity > Self.keptBodyBytes { body = [] } else { body.removeAll(keepingCapacity: true) }
        tooLarge = false
        bodyDue = false
        pending = nil
    }

    static let processStart = Moment.now

    /// The largest body memory a context keeps for the next request.
    static let keptBodyBytes = 16 * 1024
}

/// Contexts of finished requests, kept for the next ones: making a context and the array of its
/// head's fields, then freeing both, cost about 500 instructions of a small request. Owned by the
/// request thread; at most `capacity` (a context of each connection that had a request at once).
struct RequestContexts {
    static let capacity = 64
    private var kept: [RequestContext] = []

    init() { kept.reserveCapacity(Self.capacity) }

    /// A context for a request with `rawTarget`: a kept one, reset, or a new one.
    mutating func take(rawTarget: String) -> RequestContext {
        guard let context = kept.popLast() else { return RequestContext(rawTarget: rawTarget) }
        context.reset(rawTarget: rawTarget)
        return context
    }

    /// Keeps `context` for a later request, unless anything else still holds it (a deferred answer's
    /// closure, say) or enough are kept.
    mutating func give(_ context: consuming RequestContext) {
        var context = context
        guard kept.count < Self.capacity, isKnownUniquelyReferenced(&context) else { return }
        kept.append(context)
    }

    var count: Int { kept.count }
}
