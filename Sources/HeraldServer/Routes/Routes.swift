import HeraldDomain
import HeraldHTTP
import HeraldJSON
import Logging

/// Builds the router; every handler's `DomainError` becomes its problem response here, in one place.
/// What went wrong underneath is logged here with the request's id, which the problem carries too.
struct Routes {
    private(set) var router: Router
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
        router = Router { request, error in
            logger.error("unexpected error", metadata: ["http.request_id": "\(request.id)", "error": "\(error)"])
        }
    }

    mutating func add(_ method: String, _ pattern: String, _ handler: @escaping @Sendable (Request) throws -> Response) {
        let logger = logger
        router.add(method, pattern) { request in
            do {
                return try handler(request)
            } catch let error as DomainError {
                var problem = Problem(error)
                if let cause = error.cause {
                    logger.error("request failed", metadata: ["http.request_id": "\(request.id)", "error": "\(cause)"])
                    problem.extra.append(("requestId", .string(request.id)))
                }
                throw problem
            }
        }
    }
}

extension Problem {
    /// The problem for a domain refusal: 404 unknown id, 409 conflict, 422 invalid values, 503 a store
    /// that cannot write now (busy, full, read-only), 500 a damaged one.
    init(_ error: DomainError) {
        switch error.kind {
        case .notFound:
            self.init(status: 404, detail: error.message, extra: error.extra)
        case .conflict:
            self.init(status: 409, detail: error.message, extra: error.extra)
        case .unavailable:
            self.init(status: 503, detail: error.message, headers: [("Retry-After", "1")])
        case .failed:
            self.init(status: 500, detail: error.message)
        case .invalid:
            let fields = error.fields.map { JSONValue.object([("field", .string($0.field)), ("message", .string($0.message))]) }
            self.init(status: 422, detail: error.message, extra: [("errors", .array(fields))] + error.extra)
        }
    }
}

extension Request {
    /// The body as JSON: 415 unless it is declared JSON, 400 when it does not parse.
    func json() throws -> JSONValue {
        let type = header("Content-Type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json")) else {
            throw Problem(status: 415, detail: "the body must be application/json, not '\(type.isEmpty ? "(none)" : type)'")
        }
        do {
            return try JSONValue.parse(body)
        } catch {
            throw Problem(status: 400, detail: error.reason)
        }
    }
}
