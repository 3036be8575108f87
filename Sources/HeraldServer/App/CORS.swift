import Foundation
import HTTPTypes
import HeraldHTTP

/// Cross-origin access for browsers: `Access-Control-Allow-Origin` on every answer, and preflight
/// `OPTIONS` answered here. With a list of origins (not `*`), an allowed origin is echoed with
/// `Access-Control-Allow-Credentials`, so `EventSource(url, {withCredentials: true})` works.
///
/// A change (POST, PUT, PATCH, DELETE) that a browser sends from another origin is refused (403)
/// unless `--cors-origin` lists that origin or a token key is set: open by default means readable from
/// any page, not writable by any page a developer happens to visit.
struct CORS: Sendable {
    /// `*`, or the origins allowed (`https://a.example`).
    let origins: [String]?
    /// A token key is set: every change needs a token, which another origin's page does not have.
    let keyed: Bool
    let router: Router

    /// Response headers a page's script may read.
    static let exposed = "Location, Retry-After, ETag, Herald-Event-ID, X-Request-ID, Idempotency-Replayed"
    static let exposedField = HTTPField(name: .accessControlExposeHeaders, value: exposed)
    /// What every answer carries when any origin may read it: made once, as their values never change.
    static let anyOrigin = HTTPFields([HTTPField(name: .accessControlAllowOrigin, value: "*"), exposedField])
    /// Request headers allowed when the preflight names none (or names them in a form Herald will not echo).
    static let defaultRequestHeaders = "Content-Type, Last-Event-ID, Authorization, Idempotency-Key, If-Match, If-None-Match"

    init(origin: String, keyed: Bool = false, router: Router) {
        let list = origin.split(separator: ",").map { String($0.trimmingSpaces) }.filter { !$0.isEmpty }
        origins = list.isEmpty || list.contains("*") ? nil : list
        self.keyed = keyed
        self.router = router
    }

    /// What `respond` adds to an answer to a request without `Origin`, in its order.
    var fieldsWithoutOrigin: [(name: String, value: String)] {
        origins == nil ? Self.anyOrigin.map { ($0.name.rawName, $0.value) } : [(HTTPField.Name.vary.rawName, "Origin")]
    }

    func respond(to request: Request) -> Response {
        var response: Response
        if let origin = request.headers[.origin], !keyed, Self.changes(request.method), !(origins?.contains(origin) ?? false),
           !Self.sameOrigin(origin, host: request.headers.first { $0.name.canonicalName == "host" }?.value) {
            response = Problem(status: .forbidden, detail: "a change from another origin (\(RequestGuard.printable(origin))) is refused: "
                               + "list it in --cors-origin, or set a token key").response
        } else {
            response = router.respond(to: request)
        }
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

    private static func changes(_ method: HTTPRequest.Method) -> Bool {
        method == .post || method == .put || method == .patch || method == .delete
    }

    /// Whether `origin` (`scheme://host[:port]`) is the page's own: its authority is the request's
    /// `Host`, or its host is when `Host` names no port.
    static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host = host?.lowercased(), let separator = origin.range(of: "://") else { return false }
        let authority = origin[separator.upperBound...].lowercased()
        if authority == host { return true }
        guard !host.contains(":") || host.hasSuffix("]") else { return false }
        let name = authority.hasPrefix("[") ? String(authority.prefix { $0 != "]" }) + "]" : String(authority.prefix { $0 != ":" })
        return name == host
    }

    /// The preflight's header list echoed when it is a short list of header names; else the default.
    static func requestHeaders(_ asked: String?) -> String {
        guard let asked, asked.utf8.count <= 1024 else { return defaultRequestHeaders }
        let names = asked.split(separator: ",").map { String($0.trimmingSpaces) }
        guard !names.isEmpty, names.allSatisfy({ RequestGuard.isToken($0) }) else { return defaultRequestHeaders }
        return names.joined(separator: ", ")
    }
}
