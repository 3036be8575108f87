import HeraldHTTP
import Logging
import Prometheus

/// What the HTTP server tells goes to the metrics and the log: an access line per request (`info`,
/// unless turned off), a line when a stream opens and when it closes (with its duration, the events
/// it carried and why it ended), and the counters.
final class Telemetry: HTTPObserver {
    let metrics: Metrics?
    private let logger: Logger
    private let accessLog: Bool
    /// Where access lines go when set (the command line's buffered writer); else through `logger`.
    private let accessLines: AccessLog?

    init(metrics: Metrics?, logger: Logger, accessLog: Bool, accessLines: AccessLog? = nil) {
        self.metrics = metrics
        self.logger = logger
        self.accessLog = accessLog
        self.accessLines = accessLines
    }

    func answered(_ exchange: Exchange) {
        metrics?.answered(method: exchange.method, route: exchange.route, status: exchange.status, duration: exchange.duration)
        guard exchange.isStream || accessLog else { return }
        if let accessLines {
            accessLines.record(exchange)
            return
        }
        logger.info("\(AccessLog.message(exchange))", metadata: Self.metadata(AccessLog.fields(exchange)))
    }

    func streamEnded(_ summary: StreamSummary) {
        metrics?.streamClosed(reason: summary.end.rawValue, slow: summary.end == .slowConsumer)
        if let accessLines {
            accessLines.record(summary)
            return
        }
        logger.info("stream closed", metadata: Self.metadata(AccessLog.fields(summary)))
    }

    /// The logger's metadata of a line's fields: the access log's own list, so both write the same.
    private static func metadata(_ fields: [(key: String, value: String)]) -> Logger.Metadata {
        Logger.Metadata(uniqueKeysWithValues: fields.map { ($0.key, .string($0.value)) })
    }

    func delivered(_ count: Int) {
        metrics?.delivered.increment(by: Int64(count))
    }
}
