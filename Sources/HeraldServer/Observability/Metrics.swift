import Foundation
import HTTPTypes
import HeraldHTTP
import HeraldStore
import HeraldThreads
public import Prometheus
import Synchronization

/// Herald's Prometheus metrics, in a registry of its own (swift-prometheus). Counters that happen on a
/// hot path (a request answered, events written to a stream) are counted where they happen, with an
/// atomic add; what is a state (streams open, the writer's queue, the store's size, the process) is read
/// when `/metrics` is scraped.
public final class Metrics: Sendable {
    /// The registry `/metrics` renders; `herald` also gives it to swift-metrics, so that libraries
    /// that report through swift-metrics land here too.
    public let registry = PrometheusCollectorRegistry()

    private struct RequestKey: Hashable {
        let method: String
        let route: String
        let status: Int
    }

    private struct RequestMetrics {
        let count: Counter
        let duration: DurationHistogram
    }

    /// Each route, method and status's counter and histogram, made once.
    private struct Requests {
        var byKey: [RequestKey: RequestMetrics] = [:]
        /// The last key counted and its metrics: a run of one route's requests (a poller, a load test)
        /// compares two short strings instead of hashing them.
        var last: (key: RequestKey, metrics: RequestMetrics)?
    }

    private let requests = Lock(Requests())
    private let publishedCounters = Lock<[String: Counter]>([:])
    private let streamsClosed = Lock<[String: Counter]>([:])
    let delivered: Counter
    private let slowConsumers: Counter
    private let replays: Counter
    private let resyncs: Counter
    private let batchSize: ValueHistogram
    private let commitDuration: DurationHistogram
    private let lockWait: DurationHistogram
    private let lockHeld: DurationHistogram
    /// What the hub's resume counts were at the last scrape (they become counter increments).
    private let resumesSeen = Lock<(replays: Int, resyncs: Int)>((0, 0))
    /// The replicas' notifications dropped so far, by reason, as last scraped.
    private let dropsSeen = Lock<[String: Int]>([:])
    private let process = ProcessStatistics()

    /// Whether `method` is one that gets its own label (others count as `other`): compared, not hashed
    /// (a set's lookup was a third of the count's cost per request).
    static func isKnown(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": true
        default: false
        }
    }
    static let requestBuckets: [Duration] = ([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as [Double]).map { Duration.seconds($0) }

    public init() {
        delivered = registry.makeCounter(descriptor: Metrics.describe("herald_events_delivered_total", "Events written to SSE streams (one per event and stream)."))
        slowConsumers = registry.makeCounter(descriptor: Metrics.describe("herald_slow_consumer_disconnects_total", "Streams closed because their client read too slowly."))
        replays = registry.makeCounter(descriptor: Metrics.describe("herald_replays_total", "Streams that resumed with Last-Event-ID and got a replay of what they missed."))
        resyncs = registry.makeCounter(descriptor: Metrics.describe("herald_resyncs_total", "Streams that asked to resume from an id no longer kept (or unknown) and got a resync."))
        batchSize = registry.makeValueHistogram(descriptor: Metrics.describe("herald_writer_batch_changes", "Changes in each batch the writer committed."), buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
        let commitBuckets = ([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as [Double]).map { Duration.seconds($0) }
        commitDuration = registry.makeDurationHistogram(
            descriptor: Metrics.describe("herald_writer_commit_duration_seconds", "Time to finish a batch: commit, sync (with --sync full) and publish."),
            buckets: commitBuckets)
        // A batch may wait seconds for the lock behind other replicas: one bucket more.
        let lockBuckets = commitBuckets + [.seconds(5)]
        lockWait = registry.makeDurationHistogram(
            descriptor: Metrics.describe("herald_store_lock_wait_seconds",
                                         "Replicas on PostgreSQL: time each batch waited for the database's write lock (other replicas' batches held it)."),
            buckets: lockBuckets)
        lockHeld = registry.makeDurationHistogram(
            descriptor: Metrics.describe("herald_store_lock_held_seconds",
                                         "Replicas on PostgreSQL: time each batch held the write lock, from getting it to its commit's answer."),
            buckets: lockBuckets)
    }

    /// A request answered: `route` is the route's pattern, nil when none matched.
    func answered(method: String, route: String?, status: Int, duration: Duration) {
        let key = RequestKey(method: Self.isKnown(method) ? method : "other", route: route ?? "unmatched", status: status)
        let metrics = requests.withLock { requests in
            if let last = requests.last, last.key == key { return last.metrics }
            if let made = requests.byKey[key] {
                requests.last = (key, made)
                return made
            }
            let labels = [("method", key.method), ("route", key.route), ("status", String(status))]
            let made = RequestMetrics(
                count: registry.makeCounter(descriptor: Metrics.describe("herald_http_requests_total", "Requests answered, by method, route pattern and status."), labels: labels),
                duration: registry.makeDurationHistogram(descriptor: Metrics.describe("herald_http_request_duration_seconds", "From a request's head to its answer (for a stream, to its first bytes)."), labels: labels,
                                                         buckets: Self.requestBuckets))
            requests.byKey[key] = made
            requests.last = (key, made)
            return made
        }
        metrics.count.increment()
        metrics.duration.record(duration)
    }

    /// A stream closed, and why.
    func streamClosed(reason: String, slow: Bool) {
        if slow { slowConsumers.increment() }
        counter(in: streamsClosed, Self.streamsClosedName, label: ("reason", reason)).increment()
    }

    /// An event published, by its name (`bid`, `closed`, `unit`, …).
    func published(_ name: String) {
        counter(in: publishedCounters, Self.publishedName, label: ("type", name.isEmpty ? "position" : name)).increment()
    }

    /// A batch the writer finished.
    func batch(changes: Int, finishing: Duration) {
        batchSize.record(Double(changes))
        commitDuration.record(finishing)
    }

    /// A batch on a shared store let the write lock go.
    func lock(waited: Duration, held: Duration) {
        lockWait.record(waited)
        lockHeld.record(held)
    }

    /// `published`, `batch` and `lock`, as the journal, the writer and the store are told of them.
    var publishedEvents: Journal.Published { { [self] in published($0) } }
    var batches: Writer.BatchRecorder { { [self] in batch(changes: $0, finishing: $1) } }
    var lockTimes: PostgresStore.LockTimes { { [self] in lock(waited: $0, held: $1) } }

    private static var streamsClosedName: MetricNameDescriptor {
        describe("herald_streams_closed_total", "SSE streams closed, by why: client left, slow consumer, token expired, shutdown, feed ended, wait ended (a held /changes), ended by an administrator.")
    }

    private static var publishedName: MetricNameDescriptor { describe("herald_events_published_total", "Events published, by type.") }

    private func counter(in table: borrowing Lock<[String: Counter]>, _ descriptor: MetricNameDescriptor, label: (String, String)) -> Counter {
        table.withLock { table in
            if let made = table[label.1] { return made }
            let made = registry.makeCounter(descriptor: descriptor, labels: [label])
            table[label.1] = made
            return made
        }
    }

    /// What the scrape reads from the server's state.
    struct State {
        var streamsOpen = 0
        /// Observers by subject kind (`auctions`, `units`, …); an observer of several subjects counts in each.
        var observers: [String: Int] = [:]
        var replays = 0
        var resyncs = 0
        var writerQueue = 0
        var storeBytes: Int?
        var historyEvents = 0
        var oldestEventId: UInt64?
        var lastEventId: UInt64 = 0
        /// Notifications on the replicas' channels dropped (forged, replayed), by reason.
        var replicaDrops: [String: Int] = [:]
    }

    /// A metric's name and help text (the name carries its unit already: `_seconds`, `_bytes`).
    static func describe(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// The answer to `GET /metrics`.
    static func response(_ text: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                 body: .bytes(text))
    }

    /// The Prometheus text format, with the state read now.
    func render(_ state: State) -> [UInt8] {
        registry.makeGauge(descriptor: Metrics.describe("herald_server_info", "1, with the server's version as a label."),
                           labels: [("version", HeraldVersion.current)]).set(Double(1))
        registry.makeGauge(descriptor: Metrics.describe("herald_streams_open", "SSE streams open.")).set(Double(state.streamsOpen))
        for kind in Registry.topicKinds {
            registry.makeGauge(descriptor: Metrics.describe("herald_observers", "Observers by subject kind; an observer of several subjects counts in each."), labels: [("kind", kind)])
                .set(Double(state.observers[kind] ?? 0))
        }
        resumesSeen.withLock { seen in
            if state.replays > seen.replays { replays.increment(by: Int64(state.replays - seen.replays)) }
            if state.resyncs > seen.resyncs { resyncs.increment(by: Int64(state.resyncs - seen.resyncs)) }
            seen = (max(seen.replays, state.replays), max(seen.resyncs, state.resyncs))
        }
        dropsSeen.withLock { seen in
            for (reason, count) in state.replicaDrops where count > seen[reason, default: 0] {
                registry.makeCounter(descriptor: Metrics.describe("herald_replica_messages_dropped_total",
                                                                  "Notifications on the replicas' channels dropped: forged (no valid seal) or replayed."),
                                     labels: [("reason", reason)]).increment(by: Int64(count - seen[reason, default: 0]))
                seen[reason] = count
            }
        }
        registry.makeGauge(descriptor: Metrics.describe("herald_writer_queue_depth", "Changes waiting for the writer.")).set(Double(state.writerQueue))
        registry.makeGauge(descriptor: Metrics.describe("herald_store_size_bytes", "The store's files (database and its log); 0 in memory."))
            .set(Double(state.storeBytes ?? 0))
        registry.makeGauge(descriptor: Metrics.describe("herald_history_events", "Events kept for Last-Event-ID replay.")).set(Double(state.historyEvents))
        registry.makeGauge(descriptor: Metrics.describe("herald_history_oldest_event_id", "The oldest event id a stream can resume after (0: none kept)."))
            .set(Double(state.oldestEventId ?? 0))
        registry.makeGauge(descriptor: Metrics.describe("herald_last_event_id", "The newest event id published.")).set(Double(state.lastEventId))
        process.update(registry)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}
