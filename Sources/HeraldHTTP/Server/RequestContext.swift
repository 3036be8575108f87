import HTTPTypes

/// What the server keeps for one request between libmicrohttpd's calls: the target as sent and the
/// body read so far. Made by the URI callback, released by the completion callback.
final class RequestContext {
    /// The request target exactly as the client sent it (path and query, not yet decoded).
    let rawTarget: String
    /// The target, parsed in the first call.
    var target: RequestTarget?
    /// The header fields as received, read in the first call (`RequestGuard` checks them so).
    var received: [(name: String, value: String)] = []
    /// The header fields, typed when first asked for: a quick read never needs them.
    lazy var head: HTTPFields = HTTPServer.fields(received)
    /// The client's address (see `ClientResolver`), read with the head.
    var client = "-"
    /// The socket's options are still as accepted: a stream need not set them again.
    var socketAsAccepted = false
    /// The access handler has seen the head (its first call is over).
    var started = false
    /// The method and whether the version is HTTP/1.1, read in the first call.
    var method = ""
    var http11 = false
    /// When the head was read: a request's duration is counted from here.
    var startedAt = ContinuousClock.now
    /// The request's id: the client's `X-Request-ID`, or one made (see `RequestIDs`).
    var id = "-"
    /// The pattern of the route that answered, once one did.
    var route: String?
    var body: [UInt8] = []
    /// The body passed the limit: the rest is read and dropped, and the answer is 413.
    var tooLarge = false
    /// A body was declared and its deadline set (`ConnectionTable.bodyDue`); cleared once it is in.
    var bodyDue = false
    /// Set while the connection is suspended for a deferred answer.
    var pending: PendingAnswer?

    init(rawTarget: String) { self.rawTarget = rawTarget }
}
