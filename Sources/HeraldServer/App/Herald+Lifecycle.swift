public import HeraldAuth
import HeraldCore
import HeraldDomain
import HeraldHTTP
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

    /// The threads and listeners, in the order `start()` starts them; `stop()` stops them in the
    /// reverse order. The listeners come first, so that the writer, stopping before them, answers
    /// every change asked for while they still hold its connection (later ones are refused, 503).
    /// `init` made each part and set the store up on the calling thread, which stood in for the writer.
    ///
    /// 1. the HTTP listener (its daemon thread, and the stream engine's threads)
    /// 2. the `/metrics` listener, with `--metrics-port`
    /// 3. the writer's thread: changes asked for since 1 wait in its queue until now
    /// 4. the auctions' countdown timers (armed by changes; stopping cancels them)
    /// 5. the listener of other replicas' commits and messages, with PostgreSQL, and presence's second
    ///    (its graces, its counts, its exchange with the other replicas)
    /// 6. pruning, with a store
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
        journal.start()
        listener?.start()
        presenceExchange?.start()
        // Presence's second also gives back what stalled observers let go of (`Hub.trimIfReleased`).
        let (hub, exchange) = (hub, presenceExchange)
        presence.start(also: {
            hub.trimIfReleased()
            exchange?.tick()
        })
        pruning?.start()
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
        _ = try? journal.writer.perform {}
    }

    public func stop() {
        beginDraining()
        pruning?.stop()
        presence.stop()
        presenceExchange?.stop()
        listener?.stop()
        auctions.stop()
        journal.writer.stop()
        let written = journal.writer.statistics
        logger.info("writer stopped", metadata: ["writer.changes": "\(written.changes)", "writer.batches": "\(written.batches)"])
        metricsServer?.stop(grace: .zero)
        server.stop()
        hub.endAll()
        // Every request is answered: the access lines still pending go out before the last line.
        configuration.accessLines?.flush()
        logger.info("herald stopped")
    }
}
