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
        logger.info(exchange.isStream ? "stream opened" : "request", metadata: [
            "http.request_id": "\(exchange.requestID)", "http.method": "\(exchange.method)", "http.path": "\(exchange.path)",
            "http.route": "\(exchange.route ?? "-")", "http.status": "\(exchange.status)",
            "http.duration_ms": "\(Self.milliseconds(exchange.duration))", "http.client": "\(exchange.client)",
        ])
    }

    func streamEnded(_ summary: StreamSummary) {
        metrics?.streamClosed(reason: summary.end.rawValue, slow: summary.end == .slowConsumer)
        if let accessLines {
            accessLines.record(summary)
            return
        }
        logger.info("stream closed", metadata: [
            "http.request_id": "\(summary.requestID)", "http.path": "\(summary.path)", "http.client": "\(summary.client)",
            "stream.duration_ms": "\(Self.milliseconds(summary.duration))", "stream.events": "\(summary.events)",
            "stream.end": "\(summary.end.rawValue)",
        ])
    }

    func delivered(_ count: Int) {
        metrics?.delivered.increment(by: Int64(count))
    }

    /// Milliseconds with three decimals.
    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds * 1_000_000 + attoseconds / 1_000_000_000_000) / 1000
    }
}
