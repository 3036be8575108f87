public import HTTPTypes
import HeraldJSON

/// Handles one request. Runs on the HTTP server's thread: it must not block.
public typealias Handler = @Sendable (Request) throws -> Response

/// Matches method and path (with `{name}` segments) to a handler. It answers 404, 405 and `OPTIONS`
/// itself, and is the one place that says which methods a path allows (`Allow`).
public struct Router: Sendable {
    struct Route: Sendable {
        let method: HTTPRequest.Method
        let pattern: String
        let segments: [Segment]
        let handler: Handler
        /// How many segments are literal: the more, the more specific.
        let literals: Int
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    /// The indices of the routes with each number of segments: a request looks only at those.
    private var bySegmentCount: [[Int]] = []
    /// Told of an error no handler expected, before the client gets a 500 that names only the request id.
    private let onUnexpected: @Sendable (Request, any Error) -> Void

    public init(onUnexpected: @escaping @Sendable (Request, any Error) -> Void = { _, _ in }) {
        self.onUnexpected = onUnexpected
    }

    /// Adds a route. `pattern` is a path such as `/auctions/{id}/bids`.
    public mutating func add(_ method: HTTPRequest.Method, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.segments(pattern)
        let literals = segments.count { if case .literal = $0 { true } else { false } }
        while bySegmentCount.count <= segments.count { bySegmentCount.append([]) }
        bySegmentCount[segments.count].append(routes.count)
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler, literals: literals))
    }

    /// A pattern's segments: `{name}` is a parameter, anything else literal.
    static func segments(_ pattern: String) -> [Segment] {
        split(pattern).map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(part)
        }
    }

    /// For the GET route `pattern` (one parameter at most), what more literal routes of any method put
    /// at its parameter's place (`/units/events` for `/units/{id}`): a path naming one of those is theirs
    /// (or a 405), never this route's. Nil when the router may not give `pattern`'s paths to it alone:
    /// no such GET route, more than one parameter, or another GET route as literal that could match
    /// the same paths (then the order routes were added in decides).
    public func literals(shadowing pattern: String) -> Set<String>? {
        let own = Self.segments(pattern)
        let parameters = own.indices.filter { if case .parameter = own[$0] { true } else { false } }
        guard parameters.count <= 1, routes.contains(where: { $0.method == .get && $0.pattern == pattern }) else { return nil }
        let literals = own.count - parameters.count
        var shadowed = Set<String>()
        for route in routes where route.segments.count == own.count && !(route.method == .get && route.pattern == pattern) {
            let overlaps = own.indices.allSatisfy { index in
                if case .literal(let mine) = own[index], case .literal(let theirs) = route.segments[index] { return mine == theirs }
                return true
            }
            guard overlaps else { continue }
            if route.literals > literals, let index = parameters.first, case .literal(let theirs) = route.segments[index] {
                shadowed.insert(theirs)
            } else if route.literals == literals, route.method == .get {
                return nil
            }
        }
        return shadowed
    }

    /// What the router does with a request: a handler with its path parameters, or a problem.
    public enum Match {
        case handler(Handler, [String: String], pattern: String)
        case notFound
        case methodNotAllowed(allowed: [HTTPRequest.Method])
    }

    /// The most literal pattern wins, whatever the order routes were added in: `/units/events` is the
    /// stream (and `PUT /units/events` is 405), never the unit `events`.
    public func match(method: HTTPRequest.Method, segments parts: [String]) -> Match {
        // One pass over the routes with as many segments, nothing allocated: this runs for every
        // request. The methods allowed are gathered only when the method does not match.
        guard parts.count < bySegmentCount.count else { return .notFound }
        let candidates = bySegmentCount[parts.count]
        var bestLiterals = -1
        var exact: Int?
        var viaGet: Int?
        for index in candidates where routes[index].literals >= bestLiterals && Self.fits(routes[index].segments, parts) {
            if routes[index].literals > bestLiterals {
                bestLiterals = routes[index].literals
                exact = nil
                viaGet = nil
            }
            if exact == nil, routes[index].method == method { exact = index }
            if viaGet == nil, method == .head, routes[index].method == .get { viaGet = index }
        }
        if let index = exact ?? viaGet { return .handler(routes[index].handler, Self.bind(routes[index].segments, to: parts), pattern: routes[index].pattern) }
        var allowed = candidates.filter { routes[$0].literals == bestLiterals && Self.fits(routes[$0].segments, parts) }.map { routes[$0].method }
        if allowed.isEmpty { return .notFound }
        if allowed.contains(.get) { allowed.append(.head) }
        return .methodNotAllowed(allowed: Array(Set(allowed + [.options])).sorted { $0.rawValue < $1.rawValue })
    }

    /// Runs the matching handler; routing failures and thrown problems become problem responses.
    /// `OPTIONS` is answered here for every path: 204 with `Allow` (CORS adds its preflight headers).
    public func respond(to request: Request) -> Response {
        // Only an error shows the path (made printable, which costs as much as the match).
        var printablePath: String { RequestGuard.printable(request.path) }
        switch match(method: request.method, segments: request.segments) {
        case .notFound:
            return Problem(status: .notFound, detail: "no resource at \(printablePath)").response
        case .methodNotAllowed(let allowed) where request.method == .options:
            return .empty(status: .noContent, headers: [.allow: Self.list(allowed)])
        case .methodNotAllowed(let allowed):
            return Problem(status: .methodNotAllowed, detail: "\(request.method) is not allowed on \(printablePath)",
                           extra: [("allowed", .array(allowed.map { .string($0.rawValue) }))],
                           headers: [.allow: Self.list(allowed)]).response
        case .handler(let handler, let parameters, let pattern):
            var request = request
            request.parameters = parameters
            var response: Response
            do {
                response = try handler(request)
            } catch let problem as Problem {
                response = problem.response
            } catch {
                // The specifics are for the log, not the client (the server adds the request's id).
                onUnexpected(request, error)
                response = Problem(status: .internalServerError, detail: "the server failed to answer this request; the log has its id").response
            }
            response.route = pattern
            return response
        }
    }

    /// Methods as `Allow` lists them.
    static func list(_ methods: [HTTPRequest.Method]) -> String {
        methods.map(\.rawValue).joined(separator: ", ")
    }

    private static func split(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// Whether every literal segment is the part at its place (the counts are equal).
    private static func fits(_ segments: [Segment], _ parts: [String]) -> Bool {
        for index in segments.indices {
            if case .literal(let literal) = segments[index], literal != parts[index] { return false }
        }
        return true
    }

    private static func bind(_ segments: [Segment], to parts: [String]) -> [String: String] {
        var parameters: [String: String] = [:]
        for index in segments.indices {
            if case .parameter(let name) = segments[index] { parameters[name] = parts[index] }
        }
        return parameters
    }
}
