import Foundation
import HeraldTestSupport
import Testing

@Suite struct ServiceAPITests {
    @Test func healthSubjectsAndTheSpec() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let client = server.client()
        let health = try client.get("/health").json
        #expect(health["status"] as? String == "ok")
        #expect(health["observers"] as? Int == 0)
        #expect(health["uptimeSeconds"] is Int)
        let subjects = try client.get("/subjects").json["subjects"] as? [[String: Any]] ?? []
        #expect(Set(subjects.compactMap { $0["topic"] as? String }).isSuperset(of: ["auctions/1", "currency", "trips/1", "units"]))
        let trip = try client.get("/trips/1").json
        #expect((trip["display"] as? [String: Any])?["delay"] as? String == "5 minutes delay", "the example trip")

        let spec = try client.get("/openapi.yaml")
        #expect(spec.status == 200)
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../openapi.yaml")
        #expect(spec.header("Content-Type") == "application/yaml")
        #expect(spec.text == (try String(contentsOf: file, encoding: .utf8)), "the top-level openapi.yaml, through the link in Resources/")
    }

    @Test func theLivePageIsServedFromTheBinaryWithValidatorsAndAStrictPolicy() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let web = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/HeraldServer/Resources/Web")
        for (path, file, type) in [("/", "index.html", "text/html"), ("/app.js", "app.js", "text/javascript"), ("/app.css", "app.css", "text/css"),
                                   ("/favicon.svg", "favicon.svg", "image/svg+xml"), ("/favicon.ico", "favicon.svg", "image/svg+xml")] {
            let response = try client.get(path)
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix(type) == true, "\(path)")
            #expect(response.text == (try String(contentsOf: web.appendingPathComponent(file), encoding: .utf8)),
                    "\(path) serves \(file)")
            #expect(response.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            let etag = try #require(response.header("ETag"))
            let again = try client.get(path, headers: [("If-None-Match", etag)])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            #expect(again.header("Content-Length") == response.header("Content-Length"), "a 304 never says Content-Length: 0")
            for weak in ["W/\(etag)", "*", "\"other\", W/\(etag)"] {
                #expect(try client.get(path, headers: [("If-None-Match", weak)]).status == 304, "If-None-Match: \(weak)")
            }
        }
        #expect(try client.get("/", headers: [("If-None-Match", "\"stale\"")]).status == 200)
    }

    /// Open by default means any page may read and watch, not change: a change from another origin is
    /// 403 (and changes nothing) unless --cors-origin lists it or a token key is set; the page's own
    /// origin, and clients that send no Origin (curl), change as before.
    @Test func aChangeFromAnotherOriginNeedsItsOriginListedOrAKey() async throws {
        let unit = #"{"name":"U","status":"healthy"}"#
        let open = try TestHerald()
        defer { open.stop() }
        let client = open.client()
        let foreign = try client.request("PUT", "/units/evil", json: unit, headers: [("Origin", "https://evil.example")])
        #expect(foreign.status == 403)
        #expect(foreign.header("Content-Type") == "application/problem+json")
        #expect(foreign.header("Access-Control-Allow-Origin") == "*", "the page may read why")
        #expect(try client.get("/units/evil").status == 404, "nothing was changed")
        #expect(try client.request("DELETE", "/units/scout", headers: [("Origin", "http://evil.example:8080")]).status == 403)
        #expect(try client.get("/units", headers: [("Origin", "https://evil.example")]).status == 200, "reads stay open")
        let own = "http://127.0.0.1:\(open.port)"
        #expect(try client.request("PUT", "/units/own", json: unit, headers: [("Origin", own)]).status == 201, "the page's own origin")
        #expect(try client.request("PUT", "/units/plain", json: unit).status == 201, "no Origin: not a browser's cross-origin request")

        let listed = try TestHerald(corsOrigin: "https://a.example")
        defer { listed.stop() }
        #expect(try listed.client().request("PUT", "/units/a", json: unit, headers: [("Origin", "https://a.example")]).status == 201)
        #expect(try listed.client().request("PUT", "/units/b", json: unit, headers: [("Origin", "https://b.example")]).status == 403)

        let keyed = try await TestHerald.secured()
        defer { keyed.stop() }
        let token = try await Tokens.make(publish: ["*"])
        #expect(try keyed.client().request("PUT", "/units/k", json: unit, headers: [("Origin", "https://evil.example")] + Tokens.bearer(token)).status == 201,
                "with a key, the token decides")
    }

    @Test func corsHeadersAndPreflight() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("/health").header("Access-Control-Allow-Origin") == "*")
        let preflight = try client.request("OPTIONS", "/auctions/1/bids", headers: [
            ("Origin", "http://example.test"), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type"),
        ])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("POST") == true)
        #expect(preflight.header("Access-Control-Allow-Headers") == "content-type")
        #expect(try client.request("OPTIONS", "/nowhere").status == 404)
        let huge = String(repeating: "x-custom-header, ", count: 400)
        let bounded = try client.request("OPTIONS", "/auctions/1/bids", headers: [("Access-Control-Request-Headers", huge)])
        #expect(bounded.status == 204)
        #expect(bounded.header("Access-Control-Allow-Headers")?.count ?? .max < 200, "a huge list is not echoed")
        #expect(try client.get("/health").header("Access-Control-Expose-Headers")?.contains("Location") == true)
        #expect(try client.get("/health").header("Access-Control-Expose-Headers")?.contains("X-Request-ID") == true)
    }

    @Test func listedOriginsMaySendCredentials() throws {
        let server = try TestHerald(corsOrigin: "https://a.example, http://localhost:3000")
        defer { server.stop() }
        let client = server.client()
        let allowed = try client.get("/health", headers: [("Origin", "http://localhost:3000")])
        #expect(allowed.header("Access-Control-Allow-Origin") == "http://localhost:3000")
        #expect(allowed.header("Access-Control-Allow-Credentials") == "true")
        #expect(allowed.header("Vary") == "Origin")
        let other = try client.get("/health", headers: [("Origin", "https://evil.example")])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        #expect(other.header("Access-Control-Allow-Credentials") == nil)
    }

    @Test func garbageOnTheSocketIsRefusedAndTheServerCarriesOn() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let socket = try Socket(port: server.port)
        try socket.send("\u{01}\u{02}GARBAGE \u{7F}\r\n\r\n")
        var parser = HTTPResponseParser()
        while parser.head == nil {
            let bytes = try socket.receive()
            if bytes.isEmpty { break }
            try parser.feed(bytes)
        }
        #expect((400..<500).contains(parser.head?.status ?? 0))
        #expect(try server.client().get("/health").status == 200)
    }
}
