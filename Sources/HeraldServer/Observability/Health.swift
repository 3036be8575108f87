import HeraldHTTP

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
        routes.add("GET", "/health/live") { _ in
            .json(["status": "live", "uptimeSeconds": .integer(Int(started.duration(to: .now).components.seconds))],
                  headers: [("Cache-Control", "no-store")])
        }
        routes.add("GET", "/health/ready") { _ in
            if let reason = unready() {
                throw Problem(status: 503, detail: "not ready: \(reason)", headers: [("Retry-After", "1"), ("Cache-Control", "no-store")])
            }
            return .json(["status": "ready"], headers: [("Cache-Control", "no-store")])
        }
    }
}
