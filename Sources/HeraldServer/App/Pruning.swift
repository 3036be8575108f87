import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import HeraldThreads
import Logging
import Synchronization

/// Deletes events past the kept count or age (`--history`, `--history-days`) from the store and the
/// hub: once at start, then every `pruneInterval`, on the writer (the store has one user).
final class Pruning: Sendable {
    private let store: any Store
    private let hub: Hub
    private let journal: Journal
    private let configuration: HeraldConfiguration
    private let clock: any DomainClock
    private let logger: Logger
    /// The next pruning, and whether pruning has stopped (then it never arms again).
    private let state = Lock<(timer: (any TimerHandle)?, stopped: Bool)>((nil, false))

    init(store: any Store, hub: Hub, journal: Journal, configuration: HeraldConfiguration, clock: any DomainClock, logger: Logger) {
        (self.store, self.hub, self.journal, self.configuration, self.clock, self.logger) = (store, hub, journal, configuration, clock, logger)
    }

    /// Prunes once before returning (the start's prune is done when Herald answers), then on its timer.
    func start() { prune(waiting: true) }

    func stop() {
        state.withLock { state in
            state.stopped = true
            state.timer?.cancel()
            state.timer = nil
        }
    }

    private func prune(waiting: Bool = false) {
        let (store, hub, logger, configuration, clock) = (store, hub, logger, configuration, clock)
        let work: @Sendable () -> Void = {
            do {
                let cutoff = configuration.historyDays.map { clock.now.addingTimeInterval(-Double($0) * 86_400) }
                hub.forget(before: try store.prune(keep: configuration.history, before: cutoff))
            } catch {
                logger.error("pruning failed", metadata: ["store.error": "\(error)"])
            }
        }
        // On the timer, queued: the timers' thread does not wait for the writer.
        if waiting { _ = try? journal.performAndWait { _ in work() } } else { journal.perform { _ in work() } }
        state.withLock { state in
            guard !state.stopped else { return }
            state.timer = clock.schedule(at: clock.now.addingTimeInterval(configuration.pruneInterval)) { [weak self] in self?.prune() }
        }
    }
}
