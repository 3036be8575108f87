import Foundation
import HTTPTypes
import HeraldAuth
import HeraldCore
public import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import HeraldThreads
public import Logging

/// The Herald server, put together: the store, the subjects restored from it, the observer hub that
/// fans their changes out, and the HTTP routes in front of them. Starting and stopping it is in
/// `Herald+Lifecycle.swift`; the routes are in `RouteTable`.
public final class Herald: Sendable {
    public let configuration: HeraldConfiguration
    /// Internal: only the journal publishes, with the numbers the writer gives out.
    let hub: Hub
    /// Stores and publishes every change, on its writer thread.
    let journal: Journal
    let subjects: Subjects
    public var auctions: AuctionHouse { subjects.auctions }
    public var currency: CurrencySetting { subjects.currency }
    public var trips: TripBoard { subjects.trips }
    let server: HTTPServer
    /// Checks tokens, with keys that `reloadTokenKey` replaces; nil without a key.
    let verifier: TokenVerifier?
    /// The listener of `/metrics` alone, when it is not the public one (`--metrics-port`).
    let metricsServer: HTTPServer?
    /// Requests, streams, events and batches counted; nil with `--no-metrics`.
    public let metrics: Metrics?
    /// Set when shutting down begins: `/health/ready` is 503 from then on.
    let draining = Flag()
    /// Hears the commits of other replicas (PostgreSQL).
    let listener: PostgresListener?
    let pruning: Pruning?
    /// The streams opened with a token, by id, for their renewal.
    let leases = StreamLeases()
    /// Renewals of streams other replicas hold (PostgreSQL, with a token key).
    let forwarding: RenewalForwarding?
    /// Tokens an administrator revoked, and how a revocation is made, kept and sent to the replicas.
    let revocations: Revocations
    let revoking: Revoking
    /// What makes memory follow a shared store, given to the writer when it starts.
    let follower: Journal.Follower?
    /// Who watches each topic (`presence/T`), and, on replicas, its exchange with the others.
    let presence: Presence
    let presenceExchange: PresenceExchange?
    let logger: Logger
    private let startedAt = ContinuousClock.now

    /// Opens the store (if any), restores what it holds and prepares the routes. Throws when the store
    /// cannot be used: a newer or corrupt database, or an unwritable directory, never starts empty.
    public init(configuration: HeraldConfiguration, logger: Logger, clock: any DomainClock = SystemClock()) throws {
        self.configuration = configuration
        self.logger = logger
        let metrics = configuration.metrics ? Metrics() : nil
        self.metrics = metrics
        let telemetry = Telemetry(metrics: metrics, logger: logger, accessLog: configuration.accessLog, accessLines: configuration.accessLines)
        // The engine first: a publish only signals it; its threads fan the event out and write it. The
        // writer answers a batch's clients before the engine starts its fan-out: it holds its wake-ups
        // of the engine from finishing the batch (where it publishes) until they are answered.
        let streams = StreamEngine(for: configuration.http, observer: telemetry)
        let writerThread = OwnerThread(name: "herald-writer")
        let writerHold = WakeHold(owner: writerThread)
        let hub = Hub(historyLimit: configuration.history, historyByteLimit: configuration.historyBytes,
                      observerByteLimit: configuration.observerQueueBytes, packsReplays: configuration.packedReplays,
                      encoder: Self.encode) { streams.signal(unlessHeldBy: writerHold) }
        let store: (any Store)? = if let url = configuration.postgresURL {
            try PostgresStore(url: url, lockTimes: metrics?.lockTimes)
        } else if let directory = configuration.dataDirectory {
            try SQLiteStore(directory: directory, synchronous: configuration.synchronous)
        } else {
            nil
        }
        let stored = try store?.load(eventLimit: configuration.history) ?? StoredState()
        if let store {
            logger.info("store opened", metadata: [
                "store.location": "\(store.location)", "store.sequence": "\(stored.lastSequence)", "store.events": "\(stored.events.count)",
                "store.records": "\(stored.records.values.reduce(0) { $0 + $1.count })", "store.auctions": "\(stored.auctions.count)",
            ])
        } else {
            logger.info("store in memory: nothing is kept when Herald stops", metadata: ["store.location": "memory"])
        }
        // The journal declares the collections, whose members' changes in the history then read as such.
        let writer = Writer(thread: writerThread, around: Writer.Around(before: { writerHold.begin() }, after: { streams.release(writerHold) }),
                            recorder: metrics?.batches)
        let journal = Journal(hub: hub, store: store, lastSequence: stored.lastSequence, clock: clock, logger: logger,
                              writer: writer, published: metrics?.publishedEvents)
        // The store's snapshot holds no event past its sequence; were one there, the first batch would
        // publish it again: the journal's numbers and the hub's must start equal.
        hub.restore(history: stored.events.filter { $0.id <= stored.lastSequence }.map { Event(id: $0.id, topic: $0.topic, name: EventName($0.name), data: $0.data, tags: $0.tags) },
                    lastSequence: stored.lastSequence)
        let subjects = Subjects(clock: clock, sink: journal)
        (self.hub, self.journal, self.subjects) = (hub, journal, subjects)
        do {
            try Self.restore(subjects, from: stored, store: store, examples: configuration.examples, on: journal)
        } catch {
            journal.writer.stop()
            throw error
        }
        follower = store.flatMap { subjects.follower(of: $0, logger: logger) }
        listener = (store as? PostgresStore)?.listen { [weak journal] in journal?.wake() }
        pruning = store.map { Pruning(store: $0, hub: hub, journal: journal, configuration: configuration, clock: clock, logger: logger) }

        let scrape = metrics.map { Metrics.scraper($0, hub: hub, journal: journal, store: store, engine: streams) }
        let draining = draining
        let health = Health(live: startedAt) { () -> String? in
            if draining.isSet { return "Herald is shutting down" }
            if journal.writer.isStopped { return "the writer has stopped" }
            if journal.isFailingToCommit { return "the store's last commit failed" }
            if let reason = store?.unwritableReason() { return reason }
            return nil
        }
        verifier = configuration.tokenKey.map(TokenVerifier.init(key:))
        // The revocations in force, as the store keeps them (none without a store or a key).
        let now = clock.now
        let revocations = Revocations(try store.map { try $0.revocations(at: now.timeIntervalSince1970).compactMap(Revoking.revocation) } ?? [])
        self.revocations = revocations
        let access = Access(verifier: verifier, revocations: revocations, publicStreams: configuration.publicStreams,
                            writeRate: configuration.writesPerSecond.map { RateLimiter(rate: $0, burst: 2 * $0) }, now: { clock.now })
        // On replicas a renewal may reach one that does not hold the stream: it asks the others.
        let (listener, leases) = (listener, leases)
        let forwarding = configuration.tokenKey == nil ? nil
            : listener.map { RenewalForwarding(listener: $0, access: access, leases: leases) }
        self.forwarding = forwarding
        let revoking = Revoking(access: access, revocations: revocations, leases: leases, journal: journal, listener: listener, logger: logger)
        self.revoking = revoking
        let presence = Presence(hub: hub, clock: clock, grace: configuration.presenceGrace, userLimit: configuration.presenceUsers,
                                exchanged: listener != nil)
        let exchange = listener.map { PresenceExchange(listener: $0, presence: presence) }
        (self.presence, presenceExchange) = (presence, exchange)
        let (router, reads) = RouteTable.router(subjects: subjects, hub: hub, journal: journal, access: access, leases: leases, forwarding: forwarding,
                                       revoking: revoking,
                                       presence: presence,
                                       queueLimit: configuration.observerQueueLimit, startedAt: startedAt, health: health,
                                       scrape: configuration.metricsListener == nil ? scrape : nil, logger: logger)
        let cors = CORS(origin: configuration.corsOrigin, keyed: configuration.tokenKey != nil, router: router)
        let quickReads = configuration.quickReads ? QuickReads(router: router, fields: cors.fieldsWithoutOrigin, reads: reads) { [journal] in journal.generation } : nil
        // Each stream-engine loop queues the hub's batch of events to its own share of the observers.
        let fanOut = { @Sendable (shares: Int) -> StreamEngine.FanOutWork? in
            guard let batch = hub.deliveries() else { return nil }
            return StreamEngine.FanOutWork(shares: batch.shares(of: shares)) { share, shares, pause in
                hub.deliver(batch, share: share, of: shares, pause: pause)
            }
        }
        server = HTTPServer(configuration: configuration.http, logger: logger, observer: telemetry, streams: streams, fanOut: fanOut,
                            quickReads: quickReads) { request in
            cors.respond(to: request)
        }
        metricsServer = configuration.metricsListener.flatMap { listener in
            scrape.map { Self.metricsServer(listener, scrape: $0, logger: logger) }
        }
    }

    /// Encodes each event once for delivery: an SSE frame, or a bare position (`id:` alone).
    private static func encode(id: UInt64?, name: EventName, data: [UInt8]) -> [UInt8] {
        name == .position
            ? SSEEncoder.position(id: String(id ?? 0))
            : SSEEncoder.encode(SSEMessage(id: id.map { String($0) }, event: name.text, data: data))
    }

    /// The subjects as the store holds them, and the examples in an empty store, in the writer's first
    /// batch. A replica reads the store again there, under the store's write lock: another may have
    /// committed since `stored` was read (its examples, when all start at once).
    private static func restore(_ subjects: Subjects, from stored: StoredState, store: (any Store)?, examples: Bool,
                                on journal: Journal) throws {
        let restored = try DomainSnapshot(stored)
        try journal.performAndWait { batch throws(DomainError) in
            var (current, snapshot) = (stored, restored)
            if let store, store.isShared {
                do throws(StoreError) {
                    current = try store.load(eventLimit: 0)
                    snapshot = try DomainSnapshot(current)
                } catch {
                    throw DomainError(.unavailable, "the store could not be read at start: \(error)")
                }
            }
            try subjects.restore(snapshot, in: batch)
            if examples, current.records.isEmpty, current.auctions.isEmpty, current.lastSequence == 0 {
                try subjects.createExamples(in: batch)
            }
        }
    }

    /// `/metrics` alone on its own listener (`--metrics-port`), with no limits: a scraper is trusted.
    private static func metricsServer(_ listener: (host: String, port: Int), scrape: @escaping @Sendable () -> [UInt8],
                                      logger: Logger) -> HTTPServer {
        var http = HTTPServerConfiguration()
        (http.host, http.port) = (listener.host, listener.port)
        (http.streamsPerClient, http.connectionsPerSecond, http.connectionsPerAddress, http.heartbeat) = (nil, nil, nil, nil)
        http.streamThreads = 1
        var router = Router()
        router.add(.get, "/metrics") { _ in Metrics.response(scrape()) }
        let metricsRouter = router
        return HTTPServer(configuration: http, logger: logger) { request in metricsRouter.respond(to: request) }
    }
}
