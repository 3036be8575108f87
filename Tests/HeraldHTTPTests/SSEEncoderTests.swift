import HeraldHTTP
import HeraldTestSupport
import Testing
import Synchronization

@Suite struct SSEEncoderTests {
    @Test func encodesIdEventAndOneDataLine() {
        let bytes = SSEEncoder.encode(SSEMessage(id: "42", event: "bid", data: Array(#"{"topic":"auctions/1"}"#.utf8)))
        #expect(String(decoding: bytes, as: UTF8.self) == "id: 42\nevent: bid\ndata: {\"topic\":\"auctions/1\"}\n\n")
    }

    @Test func splitsLineBreaksIntoDataLinesSoAParserGetsTheSameText() {
        var parser = SSEParser()
        let data = "one\ntwo\r\nthree\rfour"
        let events = parser.feed(SSEEncoder.encode(SSEMessage(id: nil, event: nil, data: Array(data.utf8))))
        #expect(events.map(\.data) == ["one\ntwo\nthree\nfour"])
    }

    @Test func preambleAndHeartbeatAreCommentsAndRetry() {
        var parser = SSEParser()
        let events = parser.feed(SSEEncoder.preamble(retryMilliseconds: 3000) + SSEEncoder.heartbeat)
        #expect(events.isEmpty)
        #expect(parser.retry == 3000)
        #expect(parser.comments.count == 2)
    }
}

@Suite struct RouterTests {
    var router: Router {
        var router = Router()
        router.add("GET", "/auctions/{id}") { .text($0.parameter("id"), contentType: "text/plain") }
        router.add("POST", "/auctions/{id}/bids") { _ in .empty(status: 201) }
        router.add("GET", "/auctions/{id}/bids") { _ in .empty(status: 200) }
        return router
    }

    @Test func bindsPathParameters() {
        let response = router.respond(to: Request(method: "GET", path: "/auctions/7"))
        guard case .bytes(let body) = response.body else { return }
        #expect(String(decoding: body, as: UTF8.self) == "7")
    }

    @Test func unknownPathIs404AndWrongMethodIs405WithAllow() {
        #expect(router.respond(to: Request(method: "GET", path: "/nope")).status == 404)
        let response = router.respond(to: Request(method: "DELETE", path: "/auctions/7/bids"))
        #expect(response.status == 405)
        #expect(response.header("Allow") == "GET, HEAD, OPTIONS, POST")
        #expect(response.header("Content-Type") == "application/problem+json")
    }

    @Test func thrownProblemsBecomeResponses() {
        var router = Router()
        router.add("GET", "/x") { _ in throw Problem(status: 409, detail: "no") }
        let response = router.respond(to: Request(method: "GET", path: "/x"))
        #expect(response.status == 409)
    }
}

@Suite struct SSEPositionTests {
    @Test func aPositionSetsTheLastEventIdAndDispatchesNothing() {
        var parser = SSEParser()
        let events = parser.feed(SSEEncoder.position(id: "42") + SSEEncoder.encode(SSEMessage(id: nil, event: "x", data: Array("d".utf8))))
        #expect(events.map(\.event) == ["x"])
        #expect(parser.lastEventId == "42")
    }
}

@Suite struct RoutePrecedenceTests {
    @Test func theMostLiteralPatternWinsWhateverTheOrder() throws {
        for literalFirst in [true, false] {
            var router = Router()
            let literal: (inout Router) -> Void = { $0.add("GET", "/units/events") { _ in .text("stream", contentType: "text/plain") } }
            let parameter: (inout Router) -> Void = { router in
                router.add("GET", "/units/{id}") { .text("unit " + $0.parameter("id"), contentType: "text/plain") }
                router.add("PUT", "/units/{id}") { _ in .empty(status: 200) }
            }
            if literalFirst { literal(&router); parameter(&router) } else { parameter(&router); literal(&router) }
            let stream = router.respond(to: Request(method: "GET", path: "/units/events"))
            guard case .bytes(let body) = stream.body else { Issue.record("no body"); continue }
            #expect(String(decoding: body, as: UTF8.self) == "stream")
            #expect(router.respond(to: Request(method: "PUT", path: "/units/events")).status == 405, "the unit 'events' cannot be written")
            #expect(router.respond(to: Request(method: "PUT", path: "/units/scout")).status == 200)
            #expect(router.respond(to: Request(method: "GET", path: "/units/a%2Fb", segments: ["units", "a/b"])).status == 200)
        }
    }
}

@Suite struct UnexpectedErrorTests {
    struct Secret: Error, CustomStringConvertible { var description: String { "SQLITE_CORRUPT at /var/lib/herald" } }

    @Test func aHandlersUnexpectedErrorIsLoggedWithTheRequestIdAndNotSent() throws {
        let logged = LockedBox<[String]>([])
        var router = Router { request, error in logged.mutate { $0.append("\(request.id): \(error)") } }
        router.add("GET", "/boom") { _ in throw Secret() }
        // The server names the request in every problem it sends (`HTTPServer.identified`).
        let response = HTTPServer.identified(router.respond(to: Request(method: "GET", path: "/boom", id: "req-7")), id: "req-7")
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
    private let lock: Mutex<Value>
    init(_ value: Value) { lock = Mutex(value) }
    var value: Value { lock.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&$0) } }
}
