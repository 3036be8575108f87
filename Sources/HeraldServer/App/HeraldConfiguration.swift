import HeraldHTTP

/// Everything the command line can set.
public struct HeraldConfiguration: Sendable {
    public var http = HTTPServerConfiguration()
    /// Past events kept for `Last-Event-ID` replay.
    public var history = 10_000
    /// Live events that may wait for one slow observer before its connection is closed.
    public var observerQueueLimit = 4096
    /// `Access-Control-Allow-Origin`.
    public var corsOrigin = "*"
    /// Create the example auction, trip and unit at start.
    public var examples = true

    public init() {}
}
