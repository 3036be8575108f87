public import Foundation
public import HeraldAuth
public import HeraldHTTP
public import HeraldStore

/// How hard the embedded store syncs (`--sync`), named here so the command line needs only HeraldServer.
public typealias Synchronous = HeraldStore.Synchronous

/// Everything the command line can set.
public struct HeraldConfiguration: Sendable {
    public var http = HTTPServerConfiguration()
    /// Past events kept for `Last-Event-ID` replay (in memory and in the store).
    public var history = 10_000
    /// Bytes the in-memory replay history may hold; the oldest events go first past it (or `history`).
    public var historyBytes = 64 << 20
    /// Events older than this many days are pruned from the store and the replay history; nil: no age limit.
    public var historyDays: Int? = 7
    /// The data directory of the embedded store; nil: nothing is stored (an ephemeral server).
    public var dataDirectory: String? = nil
    /// The PostgreSQL database to keep state in (a libpq URL), instead of the data directory.
    public var postgresURL: String? = nil
    /// How hard each commit insists on the disk (the embedded store; PostgreSQL syncs every commit).
    public var synchronous = Synchronous.normal
    /// How often old events are pruned.
    public var pruneInterval: TimeInterval = 60
    /// Live events that may wait for one slow observer before its connection is closed.
    public var observerQueueLimit = 4096
    /// Bytes of live events that may wait for one slow observer before its connection is closed.
    public var observerQueueBytes = 16 << 20
    /// `Access-Control-Allow-Origin`.
    public var corsOrigin = "*"
    /// Answer GETs of an auction, the currency and a unit from their kept encodings without the router
    /// (`QuickReads`): the same answers, at less cost. Off only to compare the two paths.
    public var quickReads = true
    /// Send a replay that many streams ask for from the same id packed: its frames made once in pieces
    /// of about 32 KiB, the first sent from a file in memory (`Event(packing:)`, `ReplayFile`). The same
    /// bytes as the events one by one, at less cost. Off only to compare the two paths.
    public var packedReplays = true
    /// Create the example auction, trip and unit at start.
    public var examples = true
    /// The key tokens are checked with; nil: Herald is open (anyone may write and watch).
    public var tokenKey: TokenKey? = nil
    /// With a key: streams need no token (writes still do).
    public var publicStreams = false
    /// A user whose last stream on a topic closed is `left` after this many seconds unless one comes
    /// back (a reloaded tab is no `left` and `joined`).
    public var presenceGrace: TimeInterval = 5
    /// A topic with more distinct users than this shows counts only (`"truncated": true`).
    public var presenceUsers = 1000
    /// Changes one token (or, open, one address) may make a second, in bursts of twice that; more get
    /// 429. nil: no limit.
    public var writesPerSecond: Int? = 200
    /// Count requests, streams, events and the writer's batches, and answer `GET /metrics`.
    public var metrics = true
    /// Where `/metrics` is served: nil, on the public listener; else on this host and port only.
    public var metricsListener: (host: String, port: Int)? = nil
    /// An access line per request at `info`.
    public var accessLog = true
    /// Where the access lines go, formatted and written off the request threads; nil: through the
    /// logger, as every other line (what the tests capture).
    public var accessLines: AccessLog? = nil

    public init() {}
}
