import HTTPTypes
import HeraldHTTP
import HeraldJSON

/// `GET /health/live` (the process answers) and `GET /health/ready` (it can take changes and is not
/// shutting down). An orchestrator restarts a process that is not live, and a balancer sends nothing to
/// one that is not ready: Herald turns not ready as soon as it starts shutting down, while its
/// streams are still served.
struct Health: Sendable {
    let live: ContinuousClock.Instant
    /// Why Herald is not ready, or nil when it is.
    let unready: @Sendable () -> String?

    func add(to routes: inout Routes) {
        let (started, unready) = (live, unready)
        routes.add(.get, "/health/live") { _ in
            .json(["status": "live", "uptimeSeconds": .integer(Int(started.duration(to: .now).components.seconds))],
                  headers: [.cacheControl: "no-store"])
        }
        routes.add(.get, "/health/ready") { _ in
            if let reason = unready() {
                throw Problem(status: .serviceUnavailable, detail: "not ready: \(reason)", headers: [.retryAfter: "1", .cacheControl: "no-store"])
            }
            return .json(["status": "ready"], headers: [.cacheControl: "no-store"])
        }
    }
}
