import HeraldHTTP

/// Cross-origin access for browsers: `Access-Control-Allow-Origin` on every answer, and preflight
/// `OPTIONS` answered here. With a list of origins (not `*`), an allowed origin is echoed with
/// `Access-Control-Allow-Credentials`, so `EventSource(url, {withCredentials: true})` works.
struct CORS: Sendable {
    /// `*`, or the origins allowed (`https://a.example`).
    let origins: [String]?
    let router: Router

    /// Response headers a page's script may read.
    static let exposed = "Location, Retry-After, ETag, X-Request-ID, Idempotency-Replayed"
    /// Request headers allowed when the preflight names none (or names them in a form Herald will not echo).
    static let defaultRequestHeaders = "Content-Type, Last-Event-ID, Authorization, Idempotency-Key"

    init(origin: String, router: Router) {
        let list = origin.split(separator: ",").map { String($0.trimmingSpaces) }.filter { !$0.isEmpty }
        origins = list.isEmpty || list.contains("*") ? nil : list
        self.router = router
    }

    func respond(to request: Request) -> Response {
        var response: Response
        if request.method == "OPTIONS" {
            let methods = router.methods(for: request.segments)
            if methods.isEmpty {
                response = Problem(status: 404, detail: "no resource at \(RequestGuard.printable(request.path))").response
            } else {
                let allowed = Array(Set(methods + ["OPTIONS"] + (methods.contains("GET") ? ["HEAD"] : []))).sorted().joined(separator: ", ")
                response = .empty(status: 204, headers: [
                    ("Allow", allowed), ("Access-Control-Allow-Methods", allowed),
                    ("Access-Control-Allow-Headers", Self.requestHeaders(request.header("Access-Control-Request-Headers"))),
                    ("Access-Control-Max-Age", "600"),
                ])
            }
        } else {
            response = router.respond(to: request)
        }
        guard let origins else {
            response.headers.append(("Access-Control-Allow-Origin", "*"))
            response.headers.append(("Access-Control-Expose-Headers", Self.exposed))
            return response
        }
        response.headers.append(("Vary", "Origin"))
        if let origin = request.header("Origin"), origins.contains(origin) {
            response.headers.append(("Access-Control-Allow-Origin", origin))
            response.headers.append(("Access-Control-Allow-Credentials", "true"))
            response.headers.append(("Access-Control-Expose-Headers", Self.exposed))
        }
        return response
    }

    /// The preflight's header list echoed when it is a short list of header names; else the default.
    static func requestHeaders(_ asked: String?) -> String {
        guard let asked, asked.utf8.count <= 1024 else { return defaultRequestHeaders }
        let names = asked.split(separator: ",").map { String($0.trimmingSpaces) }
        guard !names.isEmpty, names.allSatisfy({ RequestGuard.isToken($0) }) else { return defaultRequestHeaders }
        return names.joined(separator: ", ")
    }
}
