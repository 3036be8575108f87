public import HeraldAuth
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import Logging

/// Starting, draining and stopping. `herald serve` calls these on SIGTERM and SIGINT; tests call them.
extension Herald {
    /// The port Herald listens on, once started.
    public var port: Int { server.port }

    /// How many GETs were answered as quick reads (`HeraldConfiguration.quickReads`).
    public var quickReadCount: Int { server.quickReadCount }

    /// How many answers quick reads made rather than sent again (one per version of a subject read).
    public var quickResponseCount: Int { server.quickResponseCount }

    /// How many quick reads were answered with an earlier read's response, nothing changed since.
    public var lastingAnswerCount: Int { server.lastingAnswerCount }

    /// The threads that fanned published events out to observers, by name, with their batch counts:
    /// only the stream engine's (`herald-streams`) when a publisher never waits for its observers.
    public var deliveringThreads: [String: Int] { hub.deliveringThreads }

    /// Open streams on each of the stream engine's loops (`--stream-threads`), in order.
    public var streamsByThread: [Int] { server.streams.countsByThread }

    /// The port `/metrics` is served on alone (`--metrics-port`), once started; nil when it is the public one.
    public var metricsPort: Int? { metricsServer?.port }

    /// A part of Herald that runs a thread or a listener: started in the order of `parts`, stopped in
    /// the reverse order.
    struct Part {
        let name: String
        let start: () throws -> Void
        let stop: () -> Void
    }

    /// The threads and listeners, in the order `start()` starts them; `stop()` stops them in the
    /// reverse order. The listeners come before the writer, so that the writer, stopping before them,
    /// answers every change asked for while they still hold its connection (later ones are refused,
    /// 503); the access log comes first, so that it stops last, once every request is answered. `init`
    /// made each part and set the store up on the calling thread, which stood in for the writer.
    var parts: [Part] {
        let (configuration, server, metricsServer, journal, hub, auctions) = (configuration, server, metricsServer, journal, hub, auctions)
        let (listener, exchange, forwarding, revoking, presence, pruning, logger) = (listener, presenceExchange, forwarding, revoking, presence, pruning, logger)
        let (revocations, follower) = (revocations, follower)
        return [
            // Its lines go out within 200 ms; stopped, it writes what is pending.
            Part(name: "access log", start: { configuration.accessLines?.start() }, stop: { configuration.accessLines?.stop() }),
            // Its daemon thread and the stream engine's threads; stopped, every stream is ended cleanly.
            Part(name: "HTTP listener", start: { try server.start() }, stop: {
                server.stop()
                hub.endAll()
            }),
            Part(name: "metrics listener", start: {
                guard let metricsServer else { return }
                try metricsServer.start()
                logger.info("metrics listening", metadata: ["http.host": "\(configuration.metricsListener?.host ?? "")",
                                                            "http.port": "\(metricsServer.port)"])
            }, stop: { metricsServer?.stop(grace: .zero) }),
            // Changes asked for since the HTTP listener started wait in its queue until now.
            Part(name: "writer", start: { journal.start(following: follower) }, stop: {
                journal.writer.stop()
                let written = journal.writer.statistics
                logger.info("writer stopped", metadata: ["writer.changes": "\(written.changes)", "writer.batches": "\(written.batches)"])
            }),
            // Armed by changes; stopping cancels them.
            Part(name: "countdowns", start: {}, stop: { auctions.stop() }),
            // With PostgreSQL: other replicas' commits and messages.
            // The replicas' messages: a renewal's, or presence's.
            // The revocations are read again every few seconds and after each reconnection: a
            // replica that missed one's message learns of it so.
            Part(name: "replica listener", start: {
                let revocationsRead = PostgresStore.revocationsRead(every: Revoking.rereadEvery) { revoking.refresh($0) }
                listener?.start(onMessage: { text in
                    guard let message = try? JSONValue.parse(Array(text.utf8)) else { return }
                    if forwarding?.received(message) == true || revoking.received(message) { return }
                    _ = exchange?.received(message)
                }, refresh: revocationsRead)
            }, stop: { listener?.stop() }),
            Part(name: "presence exchange", start: { exchange?.start() }, stop: { exchange?.stop() }),
            // Presence's second: its graces, its counts, its exchange with the other replicas, what
            // stalled observers let go of (`Hub.trimIfReleased`), and revocations that ran out.
            Part(name: "presence", start: {
                presence.start(also: {
                    hub.trimIfReleased()
                    exchange?.tick()
                    revocations.dropExpired(at: revoking.access.now())
                })
            }, stop: { presence.stop() }),
            Part(name: "pruning", start: { pruning?.start() }, stop: { pruning?.stop() }),
        ]
    }

    /// Starts every part, in order; if one cannot start, those started are stopped, in the reverse
    /// order, and its error is thrown.
    public func start() throws {
        let parts = parts
        for (index, part) in parts.enumerated() {
            do {
                try part.start()
            } catch {
                logger.error("the \(part.name) did not start: stopping what did", metadata: ["error": "\(error)"])
                for started in parts[..<index].reversed() { started.stop() }
                throw error
            }
        }
        logger.info("herald listening", metadata: ["http.host": "\(configuration.http.host)", "http.port": "\(port)"])
        if let key = configuration.tokenKey {
            logger.info("tokens required", metadata: ["auth.algorithm": "\(key.name)", "auth.public_streams": "\(configuration.publicStreams)"])
        } else {
            logger.warning("no token key (--jwt-key): Herald is open, and anyone who can reach it may change and watch everything")
        }
    }

    /// Checks tokens with `key` from now on (`SIGHUP` with a key file): no stream or request is
    /// dropped; a token whose key is gone is refused at its next use, and a stream it opened runs on
    /// until it ends or is renewed. False when Herald was started without a key (one cannot be added).
    public func reloadTokenKey(_ key: TokenKey) -> Bool {
        guard let verifier else { return false }
        verifier.reload(key)
        return true
    }

    /// Starts shutting down: `/health/ready` answers 503, so a balancer sends no more, while requests
    /// and streams are served as before until `stop()`.
    public func beginDraining() {
        guard draining.set() else { return }
        logger.info("draining: /health/ready answers 503")
    }

    /// Stops what `start()` started, in the reverse order: ends every stream cleanly, and stops listening last.
    /// Returns once every change queued before the call has run (a timer's firing is queued on the
    /// writer, not waited for); at once after `stop`.
    public func settle() {
        _ = try? journal.performAndWait { _ in }
    }

    public func stop() {
        beginDraining()
        for part in parts.reversed() { part.stop() }
        logger.info("herald stopped")
    }
}
