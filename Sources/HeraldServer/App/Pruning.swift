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

    func start() { prune() }

    func stop() {
        state.withLock { state in
            state.stopped = true
            state.timer?.cancel()
            state.timer = nil
        }
    }

    private func prune() {
        let (store, hub, logger, configuration, clock) = (store, hub, logger, configuration, clock)
        _ = try? journal.writer.perform {
            do {
                let cutoff = configuration.historyDays.map { clock.now.addingTimeInterval(-Double($0) * 86_400) }
                hub.forget(before: try store.prune(keep: configuration.history, before: cutoff))
            } catch {
                logger.error("pruning failed", metadata: ["store.error": "\(error)"])
            }
        }
        state.withLock { state in
            guard !state.stopped else { return }
            state.timer = clock.schedule(at: clock.now.addingTimeInterval(configuration.pruneInterval)) { [weak self] in self?.prune() }
        }
    }
}
