import HeraldThreads
import HeraldHTTP
import HeraldTestSupport
import HTTPTypes
import Testing
import Synchronization

@Suite struct RouterTests {
    var router: Router {
        var router = Router()
        router.add(.get, "/auctions/{id}") { .text($0.parameter("id"), contentType: "text/plain") }
        router.add(.post, "/auctions/{id}/bids") { _ in .empty(status: 201) }
        router.add(.get, "/auctions/{id}/bids") { _ in .empty(status: 200) }
        return router
    }

    @Test func bindsPathParameters() {
        let response = router.respond(to: Request(method: .get, path: "/auctions/7"))
        guard case .bytes(let body) = response.body else {
            Issue.record("a body of bytes, not \(response.body)")
            return
        }
        #expect(String(decoding: body, as: UTF8.self) == "7")
    }

    @Test func aRouteIsShadowedByTheMoreLiteralRoutesBesideIt() {
        var router = Router()
        router.add(.get, "/units/{id}") { _ in .empty(status: 200) }
        router.add(.put, "/units/{id}") { _ in .empty(status: 200) }
        router.add(.get, "/units/events") { _ in .empty(status: 200) }
        router.add(.post, "/units/batch") { _ in .empty(status: 200) }
        router.add(.get, "/units/{id}/events") { _ in .empty(status: 200) }
        router.add(.get, "/trips/{id}") { _ in .empty(status: 200) }
        router.add(.get, "/currency") { _ in .empty(status: 200) }
        #expect(router.literals(shadowing: "/units/{id}") == ["events", "batch"])
        #expect(router.literals(shadowing: "/trips/{id}") == [])
        #expect(router.literals(shadowing: "/currency") == [])
        // Not a GET route, or more than one parameter: nothing to shadow, no quick answer.
        #expect(router.literals(shadowing: "/auctions/{id}") == nil)
        router.add(.get, "/{a}/{b}") { _ in .empty(status: 200) }
        #expect(router.literals(shadowing: "/{a}/{b}") == nil)
        // Another GET route as literal over the same paths: the order routes were added in decides.
        router.add(.get, "/{kind}/scout") { _ in .empty(status: 200) }
        #expect(router.literals(shadowing: "/units/{id}") == nil)
        #expect(router.literals(shadowing: "/trips/{id}") == nil)
    }

    @Test func unknownPathIs404AndWrongMethodIs405WithAllow() {
        #expect(router.respond(to: Request(method: .get, path: "/nope")).status == 404)
        let response = router.respond(to: Request(method: .delete, path: "/auctions/7/bids"))
        #expect(response.status == 405)
        #expect(response.header(.allow) == "GET, HEAD, OPTIONS, POST")
        #expect(response.header(.contentType) == "application/problem+json")
    }

    /// The router is the one place that says which methods a path allows: a 405's `Allow` and an
    /// `OPTIONS` answer's are the same list, and a literal path's own methods win over a parameter's.
    @Test func optionsIsAnsweredByTheRouterWithTheSameAllowAs405() {
        var router = self.router
        router.add(.delete, "/auctions/{id}") { _ in .empty(status: .noContent) }
        router.add(.put, "/auctions/featured") { _ in .empty(status: .noContent) }
        let options = router.respond(to: Request(method: .options, path: "/auctions/7/bids"))
        #expect(options.status == .noContent)
        #expect(options.header(.allow) == router.respond(to: Request(method: .delete, path: "/auctions/7/bids")).header(.allow))
        #expect(router.respond(to: Request(method: .options, path: "/auctions/7")).header(.allow) == "DELETE, GET, HEAD, OPTIONS")
        #expect(router.respond(to: Request(method: .options, path: "/auctions/featured")).header(.allow) == "OPTIONS, PUT",
                "the literal route's methods, though added after the parameter's")
        #expect(router.respond(to: Request(method: .options, path: "/nope")).status == .notFound)
    }

    @Test func thrownProblemsBecomeResponses() {
        var router = Router()
        router.add(.get, "/x") { _ in throw Problem(status: 409, detail: "no") }
        let response = router.respond(to: Request(method: .get, path: "/x"))
        #expect(response.status == 409)
    }
}

@Suite struct RoutePrecedenceTests {
    @Test func theMostLiteralPatternWinsWhateverTheOrder() throws {
        for literalFirst in [true, false] {
            var router = Router()
            let literal: (inout Router) -> Void = { $0.add(.get, "/units/events") { _ in .text("stream", contentType: "text/plain") } }
            let parameter: (inout Router) -> Void = { router in
                router.add(.get, "/units/{id}") { .text("unit " + $0.parameter("id"), contentType: "text/plain") }
                router.add(.put, "/units/{id}") { _ in .empty(status: 200) }
            }
            if literalFirst { literal(&router); parameter(&router) } else { parameter(&router); literal(&router) }
            let stream = router.respond(to: Request(method: .get, path: "/units/events"))
            guard case .bytes(let body) = stream.body else { Issue.record("no body"); continue }
            #expect(String(decoding: body, as: UTF8.self) == "stream")
            #expect(router.respond(to: Request(method: .put, path: "/units/events")).status == 405, "the unit 'events' cannot be written")
            #expect(router.respond(to: Request(method: .put, path: "/units/scout")).status == 200)
            #expect(router.respond(to: Request(method: .get, path: "/units/a%2Fb", segments: ["units", "a/b"])).status == 200)
        }
    }
}

@Suite struct UnexpectedErrorTests {
    struct Secret: Error, CustomStringConvertible { var description: String { "SQLITE_CORRUPT at /var/lib/herald" } }

    @Test func aHandlersUnexpectedErrorIsLoggedWithTheRequestIdAndNotSent() throws {
        let logged = LockedBox<[String]>([])
        var router = Router { request, error in logged.mutate { $0.append("\(request.id): \(error)") } }
        router.add(.get, "/boom") { _ in throw Secret() }
        // The server names the request in every problem it sends (`HTTPServer.identified`).
        let response = HTTPServer.identified(router.respond(to: Request(method: .get, path: "/boom", id: "req-7")), id: "req-7")
        #expect(response.status == 500)
        #expect(response.route == "/boom")
        guard case .bytes(let body) = response.body else { Issue.record("no body"); return }
        let text = String(decoding: body, as: UTF8.self)
        #expect(!text.contains("SQLITE") && !text.contains("/var/lib"), "\(text)")
        #expect(text.contains(#""requestId":"req-7""#))
        #expect(logged.value == ["req-7: SQLITE_CORRUPT at /var/lib/herald"])
    }
}

final class LockedBox<Value: Sendable>: Sendable {
    private let lock: Lock<Value>
    init(_ value: Value) { lock = Lock(value) }
    var value: Value { lock.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&$0) } }
}

/// Every problem's title is its status's reason phrase (RFC 9110 §15), never a generic "Error".
@Test func everyClientAndServerErrorHasItsReasonPhrase() {
    let named = [400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 426, 428, 429,
                 431, 500, 501, 502, 503, 504, 505]
    for status in named {
        let title = Problem(status: HTTPResponse.Status(code: status), detail: "").title
        #expect(title != "Client Error" && title != "Server Error" && title != "Error", "\(status): \(title)")
    }
    #expect(Problem(status: .preconditionFailed, detail: "").title == "Precondition Failed")
}
