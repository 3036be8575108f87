/// What the server keeps for one request between libmicrohttpd's calls: the body read so far.
final class RequestContext {
    var body: [UInt8] = []
    /// The body passed the limit: the rest is read and dropped, and the answer is 413.
    var tooLarge = false
}
