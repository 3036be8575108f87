import HeraldCore
import HeraldHTTP
import HeraldStore

extension Metrics {
    /// What `/metrics` answers: the counters, and the state read at each scrape.
    static func scraper(_ metrics: Metrics, hub: Hub, journal: Journal, store: (any Store)?,
                        engine: StreamEngine) -> @Sendable () -> [UInt8] {
        return {
            var state = Metrics.State()
            state.streamsOpen = engine.count
            for subject in hub.subjects {
                state.observers[String(subject.topic.prefix { $0 != "/" }), default: 0] += subject.observers
            }
            (state.replays, state.resyncs) = hub.resumes
            state.writerQueue = journal.writer.queueDepth
            state.storeBytes = store?.sizeBytes().map { Int($0) }
            state.historyEvents = hub.historyCount
            state.oldestEventId = hub.oldestEventId
            state.lastEventId = hub.lastEventId
            if let seal = (store as? PostgresStore)?.seal {
                state.replicaDrops = Dictionary(uniqueKeysWithValues: seal.drops.map { ($0.key.rawValue, $0.value) })
            }
            return metrics.render(state)
        }
    }
}
