import HeraldJSON

/// Handles one request. Runs on the HTTP server's thread: it must not block.
public typealias Handler = @Sendable (Request) throws -> Response

/// Matches method and path (with `{name}` segments) to a handler; answers 404 and 405 itself.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let segments: [Segment]
        let handler: Handler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    /// Adds a route. `pattern` is a path such as `/auctions/{id}/bids`.
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(part)
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    /// What the router does with a request: a handler with its path parameters, or a problem.
    public enum Match {
        case handler(Handler, [String: String])
        case notFound
        case methodNotAllowed(allowed: [String])
    }

    public func match(method: String, path: String) -> Match {
        let parts = Self.split(path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.segments, to: parts) else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .handler(route.handler, parameters)
            }
            allowed.append(route.method)
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allowed: Array(Set(allowed + ["OPTIONS"])).sorted())
    }

    /// Runs the matching handler; routing failures and thrown problems become problem responses.
    public func respond(to request: Request) -> Response {
        switch match(method: request.method, path: request.path) {
        case .notFound:
            return Problem(status: 404, detail: "no resource at \(request.path)").response
        case .methodNotAllowed(let allowed):
            return Problem(status: 405, detail: "\(request.method) is not allowed on \(request.path)",
                           extra: [("allowed", .array(allowed.map { .string($0) }))],
                           headers: [("Allow", allowed.joined(separator: ", "))]).response
        case .handler(let handler, let parameters):
            var request = request
            request.parameters = parameters
            do {
                return try handler(request)
            } catch let problem as Problem {
                return problem.response
            } catch {
                return Problem(status: 500, detail: "unexpected error: \(error)").response
            }
        }
    }

    /// All methods routed for `path`, for CORS preflight and `Allow`.
    public func methods(for path: String) -> [String] {
        let parts = Self.split(path)
        return routes.filter { Self.bind($0.segments, to: parts) != nil }.map(\.method)
    }

    private static func split(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    private static func bind(_ segments: [Segment], to parts: [String]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal): if literal != part { return nil }
            case .parameter(let name): parameters[name] = part
            }
        }
        return parameters
    }
}
