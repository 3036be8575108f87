import Foundation
import HeraldAuth
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import Logging
import Synchronization

/// The Herald server: the domain's subjects, the observer hub that fans their changes out, and the
/// HTTP routes in front of them.
public final class Herald: Sendable {
    public let configuration: HeraldConfiguration
    /// Internal: only the journal publishes, with the numbers the writer gives out.
    let hub: Hub
    /// Stores and publishes every change, on its writer thread.
    let journal: Journal
    public let auctions: AuctionHouse
    public let currency: CurrencySetting
    public let trips: TripBoard
    public let units: UnitStore
    private let server: HTTPServer
    /// The listener of `/metrics` alone, when it is not the public one (`--metrics-port`).
    private let metricsServer: HTTPServer?
    /// Requests, streams, events and batches counted; nil with `--no-metrics`.
    public let metrics: Metrics?
    /// Set when shutting down begins: `/health/ready` is 503 from then on.
    private let draining = Flag()
    private let store: (any Store)?
    /// Hears the commits of other replicas (PostgreSQL).
    private let listener: PostgresListener?
    private let clock: any DomainClock
    /// The next pruning, and whether Herald has stopped (then pruning never arms again).
    private let pruning = Mutex<(timer: (any TimerHandle)?, stopped: Bool)>((nil, false))
    private let logger: Logger
    private let startedAt = ContinuousClock.now

    /// Opens the store (if any), restores what it holds and prepares the routes. Throws when the store
    /// cannot be used: a newer or corrupt database, or an unwritable directory, never starts empty.
    public init(configuration: HeraldConfiguration, logger: Logger, clock: any DomainClock = SystemClock()) throws {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        let hub = Hub(historyLimit: configuration.history) { id, name, data in
            name == Event.position
                ? SSEEncoder.position(id: String(id ?? 0))
                : SSEEncoder.encode(SSEMessage(id: id.map { String($0) }, event: name, data: data))
        }
        let store: (any Store)? = if let url = configuration.postgresURL {
            try PostgresStore(url: url)
        } else if let directory = configuration.dataDirectory {
            try SQLiteStore(directory: directory, synchronous: configuration.synchronous)
        } else {
            nil
        }
        let stored = try store?.load(eventLimit: configuration.history) ?? StoredState()
        self.store = store
        if let store {
            logger.info("store opened", metadata: [
                "store.location": "\(store.location)", "store.sequence": "\(stored.lastSequence)", "store.events": "\(stored.events.count)",
            ])
        }
        hub.restore(history: stored.events.map { Event(id: $0.id, topic: $0.topic, name: $0.name, data: $0.data, tags: $0.tags) },
                    lastSequence: stored.lastSequence)
        let restored = try DomainSnapshot(stored)
        let journal = Journal(hub: hub, store: store, lastSequence: stored.lastSequence, clock: clock, logger: logger)
        self.hub = hub
        self.journal = journal
        let (auctions, currency, trips, units) = (AuctionHouse(clock: clock, sink: journal), CurrencySetting(sink: journal),
                                                  TripBoard(sink: journal), UnitStore(sink: journal))
        (self.auctions, self.currency, self.trips, self.units) = (auctions, currency, trips, units)
        // On the writer, like every change: restoring closes an auction whose deadline passed meanwhile.
        let examples = configuration.examples && stored.records.isEmpty && stored.auctions.isEmpty && stored.lastSequence == 0
        do {
            try journal.writer.perform { () throws(DomainError) in
                currency.restore(restored.currency)
                trips.restore(restored.trips)
                units.restore(restored.units)
                try auctions.restore(restored.auctions)
                if examples { try Self.createExamples(auctions: auctions, trips: trips, units: units) }
            }
        } catch {
            journal.writer.stop()
            throw error
        }

        if let store {
            // Weak: the journal keeps these, and the domain keeps the journal.
            let reload: @Sendable (Bool) -> Bool = { [weak currency, weak trips, weak units, weak auctions] catchingUp in
                guard let currency, let trips, let units, let auctions else { return true }
                do {
                    let stored = try DomainSnapshot(try store.load(eventLimit: 0))
                    currency.restore(stored.currency)
                    trips.restore(stored.trips)
                    units.restore(stored.units)
                    // Catching up, countdowns go on as at start; after a lost batch each fires once now.
                    if catchingUp { try auctions.restore(stored.auctions) } else { auctions.reload(stored.auctions) }
                    if !catchingUp { logger.warning("memory reloaded from the store after a lost batch") }
                    return true
                } catch {
                    // Tried again before each batch; changes are refused until then.
                    logger.error("memory could not be reloaded from the store", metadata: ["error": "\(error)", "store.catching_up": "\(catchingUp)"])
                    return false
                }
            }
            // A batch the store could not commit never happened: memory goes back to what the store holds.
            journal.onLostBatch { reload(false) }
            // Replicas: memory follows what the others commit, before each batch that finds the store
            // moved; the listener wakes the writer when one commits.
            if store.isShared { journal.onCatchUp { reload(true) } }
        }
        listener = (store as? PostgresStore)?.listen { [weak journal] in journal?.wake() }

        let metrics = configuration.metrics ? Metrics() : nil
        self.metrics = metrics
        if let metrics {
            journal.countPublished { metrics.published($0) }
            journal.writer.recordBatches { metrics.batch(changes: $0, finishing: $1) }
        }
        // The server's stream engine, for the scrape; the server is made after the routes that scrape it.
        let engine = Slot<StreamEngine>()
        let scrape = metrics.map { Self.scraper($0, hub: hub, journal: journal, store: store, engine: engine) }
        let draining = draining
        let health = Health(live: startedAt) { () -> String? in
            if draining.isSet { return "Herald is shutting down" }
            if journal.writer.isStopped { return "the writer has stopped" }
            if journal.isFailingToCommit { return "the store's last commit failed" }
            if let reason = store?.unwritableReason() { return reason }
            return nil
        }
        let access = Access(verifier: configuration.tokenKey.map(TokenVerifier.init(key:)), publicStreams: configuration.publicStreams,
                            writeRate: configuration.writesPerSecond.map { RateLimiter(rate: $0, burst: 2 * $0) }, now: { Date() })
        let router = Self.router(hub: hub, journal: journal, auctions: auctions, currency: currency, trips: trips, units: units,
                                 access: access, queueLimit: configuration.observerQueueLimit, startedAt: startedAt, health: health,
                                 scrape: configuration.metricsListener == nil ? scrape : nil, logger: logger)
        let cors = CORS(origin: configuration.corsOrigin, router: router)
        let telemetry = Telemetry(metrics: metrics, logger: logger, accessLog: configuration.accessLog)
        server = HTTPServer(configuration: configuration.http, logger: logger, observer: telemetry) { request in cors.respond(to: request) }
        engine.value = server.streams
        if let listener = configuration.metricsListener, let scrape {
            var http = HTTPServerConfiguration()
            (http.host, http.port) = (listener.host, listener.port)
            (http.streamsPerClient, http.connectionsPerSecond, http.heartbeat) = (nil, nil, nil)
            var router = Router()
            router.add("GET", "/metrics") { _ in Metrics.response(scrape()) }
            let metricsRouter = router
            metricsServer = HTTPServer(configuration: http, logger: logger) { request in metricsRouter.respond(to: request) }
        } else {
            metricsServer = nil
        }
        // A publish only signals the stream engine; its thread fans the event out and writes it.
        let streams = server.streams
        streams.beforeWriting { hub.deliver() }
        hub.deliverWhenSignalled { streams.signal() }
        // The writer answers a batch's clients before the engine starts its fan-out.
        journal.writer.aroundAnswers(before: { streams.holdSignals() }, after: { streams.releaseSignals() })
    }

    /// The port Herald listens on, once started.
    public var port: Int { server.port }

    public func start() throws {
        try server.start()
        if let metricsServer {
            do {
                try metricsServer.start()
            } catch {
                server.stop(grace: .zero)
                throw error
            }
            logger.info("metrics listening", metadata: ["http.host": "\(configuration.metricsListener?.host ?? "")",
                                                        "http.port": "\(metricsServer.port)"])
        }
        prune()
        logger.info("herald listening", metadata: ["http.host": "\(configuration.http.host)", "http.port": "\(port)"])
        if let key = configuration.tokenKey {
            logger.info("tokens required", metadata: ["auth.algorithm": "\(key.name)", "auth.public_streams": "\(configuration.publicStreams)"])
        } else {
            logger.warning("no token key (--jwt-key): Herald is open, and anyone who can reach it may change and watch everything")
        }
    }

    /// The port `/metrics` is served on alone (`--metrics-port`), once started; nil when it is the public one.
    public var metricsPort: Int? { metricsServer?.port }

    /// Starts shutting down: `/health/ready` answers 503, so a balancer sends no more, while requests
    /// and streams are served as before until `stop()`.
    public func beginDraining() {
        guard draining.set() else { return }
        logger.info("draining: /health/ready answers 503")
    }

    /// Stops timers, ends every stream cleanly and stops listening.
    public func stop() {
        beginDraining()
        pruning.withLock { pruning in
            pruning.stopped = true
            pruning.timer?.cancel()
            pruning.timer = nil
        }
        listener?.stop()
        auctions.stop()
        // Every change asked for is answered before the server stops; later ones are refused (503).
        journal.writer.stop()
        let written = journal.writer.statistics
        logger.info("writer stopped", metadata: ["writer.changes": "\(written.changes)", "writer.batches": "\(written.batches)"])
        server.stop()
        metricsServer?.stop(grace: .zero)
        hub.endAll()
        logger.info("herald stopped")
    }

    /// Deletes events past the kept count or age from the store and the hub, then again every interval.
    private func prune() {
        guard let store else { return }
        let (hub, logger, configuration, clock) = (hub, logger, configuration, clock)
        // On the writer: the store has one user.
        _ = try? journal.writer.perform {
            do {
                let cutoff = configuration.historyDays.map { clock.now.addingTimeInterval(-Double($0) * 86_400) }
                hub.forget(before: try store.prune(keep: configuration.history, before: cutoff))
            } catch {
                logger.error("pruning failed", metadata: ["store.error": "\(error)"])
            }
        }
        pruning.withLock { pruning in
            guard !pruning.stopped else { return }
            pruning.timer = clock.schedule(at: clock.now.addingTimeInterval(configuration.pruneInterval)) { [weak self] in self?.prune() }
        }
    }

    private static func router(hub: Hub, journal: Journal, auctions: AuctionHouse, currency: CurrencySetting, trips: TripBoard,
                               units: UnitStore, access: Access, queueLimit: Int, startedAt: ContinuousClock.Instant,
                               health: Health, scrape: (@Sendable () -> [UInt8])?, logger: Logger) -> Router {
        let events = EventRoutes(hub: hub, queueLimit: queueLimit, access: access) { topic -> EventRoutes.TopicStatus in
            let parts = topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            let known: Bool
            switch (parts.first, parts.count) {
            case ("currency", 1), ("units", 1): return .exists
            case ("auctions", 2) where !parts[1].isEmpty: known = auctions.exists(parts[1])
            case ("trips", 2) where !parts[1].isEmpty: known = trips.exists(parts[1])
            case ("units", 2) where Unit.isValidId(parts[1]): known = units.exists(parts[1])
            case ("notifications", 2) where NotificationPost.isValidName(parts[1]): return .exists
            default: return .malformed
            }
            return known ? .exists : .unknown
        }
        var routes = Routes(logger: logger, journal: journal, access: access)
        routes.addAuctions(auctions, events: events)
        routes.addCurrency(currency, events: events)
        routes.addTrips(trips, events: events)
        routes.addUnits(units, events: events)
        routes.addNotifications(journal, events: events)
        routes.add("GET", "/events") { request in try events.streamMany(request) }
        routes.add("GET", "/health") { _ in
            .json([
                "status": "ok", "observers": .integer(hub.observerCount), "subjects": .integer(hub.subjects.count),
                "lastEventId": .string(String(hub.lastEventId)),
                "uptimeSeconds": .integer(Int(startedAt.duration(to: .now).components.seconds)),
            ])
        }
        health.add(to: &routes)
        if let scrape { routes.add("GET", "/metrics") { _ in Metrics.response(scrape()) } }
        routes.add("GET", "/subjects") { _ in
            .json(["subjects": .array(hub.subjects.map {
                ["topic": .string($0.topic), "observers": .integer($0.observers), "lastEventId": .string(String($0.lastEventId))]
            })])
        }
        routes.addPage()
        routes.add("GET", "/openapi.yaml") { _ in .text(OpenAPIDocument.yaml, contentType: "application/yaml") }
        return routes.router
    }

    /// What `/metrics` answers: the counters, and the state read at each scrape.
    private static func scraper(_ metrics: Metrics, hub: Hub, journal: Journal, store: (any Store)?,
                                engine: Slot<StreamEngine>) -> @Sendable () -> [UInt8] {
        return {
            var state = Metrics.State()
            state.streamsOpen = engine.value?.count ?? 0
            for subject in hub.subjects {
                state.observers[String(subject.topic.prefix { $0 != "/" }), default: 0] += subject.observers
            }
            (state.replays, state.resyncs) = hub.resumes
            state.writerQueue = journal.writer.queueDepth
            state.storeBytes = store?.sizeBytes().map { Int($0) }
            state.historyEvents = hub.historyCount
            state.oldestEventId = hub.oldestEventId
            state.lastEventId = hub.lastEventId
            return metrics.render(state)
        }
    }

    private static func createExamples(auctions: AuctionHouse, trips: TripBoard, units: UnitStore) throws(DomainError) {
        _ = try auctions.create(NewAuction(item: "Antique pocket watch", countdownSeconds: 7, startingPrice: 100))
        let date = { (text: String) in Timestamp.parse(text) ?? .now }
        _ = try trips.create(NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                                 actualDeparture: date("2015-10-09T13:14:53Z")))
        _ = try units.put(HeraldDomain.Unit(id: "scout", name: "Scout", status: .healthy))
    }
}

/// A flag set once, shared by reference.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    /// Sets the flag; true when it was not set before.
    func set() -> Bool { !value.exchange(true, ordering: .relaxed) }
}

/// A value filled in after what reads it is made.
final class Slot<Value: Sendable>: Sendable {
    private let stored = Mutex<Value?>(nil)

    var value: Value? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
