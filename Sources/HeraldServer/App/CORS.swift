import HeraldHTTP
import HTTPTypes

/// Cross-origin access for browsers: `Access-Control-Allow-Origin` on every answer, and preflight
/// `OPTIONS` answered here. With a list of origins (not `*`), an allowed origin is echoed with
/// `Access-Control-Allow-Credentials`, so `EventSource(url, {withCredentials: true})` works.
struct CORS: Sendable {
    /// `*`, or the origins allowed (`https://a.example`).
    let origins: [String]?
    let router: Router

    /// Response headers a page's script may read.
    static let exposed = "Location, Retry-After, ETag, X-Request-ID, Idempotency-Replayed"
    static let exposedField = HTTPField(name: .accessControlExposeHeaders, value: exposed)
    /// What every answer carries when any origin may read it: made once, as their values never change.
    static let anyOrigin = HTTPFields([HTTPField(name: .accessControlAllowOrigin, value: "*"), exposedField])
    /// Request headers allowed when the preflight names none (or names them in a form Herald will not echo).
    static let defaultRequestHeaders = "Content-Type, Last-Event-ID, Authorization, Idempotency-Key"

    init(origin: String, router: Router) {
        let list = origin.split(separator: ",").map { String($0.trimmingSpaces) }.filter { !$0.isEmpty }
        origins = list.isEmpty || list.contains("*") ? nil : list
        self.router = router
    }

    func respond(to request: Request) -> Response {
        var response = router.respond(to: request)
        if request.method == .options, response.status == .noContent, let allowed = response.headers[.allow] {
            // A preflight: the router said which methods; CORS says which headers, and for how long.
            response.headers[.accessControlAllowMethods] = allowed
            response.headers[.accessControlAllowHeaders] = Self.requestHeaders(request.headers[.accessControlRequestHeaders])
            response.headers[.accessControlMaxAge] = "600"
        }
        // Appended, not set: no handler writes these, and appending does not search the fields.
        guard let origins else {
            response.headers.append(contentsOf: Self.anyOrigin)
            return response
        }
        response.headers.append(HTTPField(name: .vary, value: "Origin"))
        if let origin = request.headers[.origin], origins.contains(origin) {
            response.headers.append(HTTPField(name: .accessControlAllowOrigin, value: origin))
            response.headers.append(HTTPField(name: .accessControlAllowCredentials, value: "true"))
            response.headers.append(Self.exposedField)
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
