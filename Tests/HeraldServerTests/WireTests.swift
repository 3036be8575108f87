import Foundation
import HeraldTestSupport
import Testing

/// Requests written byte by byte on a raw socket: framing that could smuggle a second request, hosts,
/// targets, and answers libmicrohttpd would otherwise never send.
@Suite struct WireTests {
    func statuses(_ answer: String) -> [Int] {
        answer.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    let smuggled = "PUT /units/smuggled HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 34\r\n\r\n{\"name\":\"Smuggl\",\"status\":\"dead\"} "

    @Test func ambiguousFramingIsRefusedAndTheRestIsNeverARequest() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let heads = [
            "Content-Length: 0\r\nContent-Length: 104",
            "Content-Length : 104",
            "Content-Length: 104\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked\r\nContent-Length: 104",
        ]
        for head in heads {
            let answer = try server.exchange("POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(head)\r\n\r\n\(smuggled)")
            #expect(statuses(answer) == [400], "\(head): \(answer)")
            #expect(answer.contains("application/problem+json"))
            #expect(answer.contains("Connection: close"))
        }
        #expect(try server.client().get("/units/smuggled").status == 404)
    }

    /// RFC 9110 §5.5: a field value with NUL, CR or LF is refused and its connection closed. libmicrohttpd
    /// reads a value up to a NUL, so `Content-Length: 2\0NN` was 2 and the request behind it ran.
    @Test func fieldValuesWithNulCROrFoldsAreRefusedAndTheRestIsNeverARequest() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let nul = "\u{0}"
        let heads = [
            "Content-Length: 2\(nul)NN",                               // the last field
            "Content-Length: 2\(nul)NN\r\nX-After: 1",               // a field in the middle
            "Content-Length: 2\r\nX-Note: a\(nul)b",
            "Content-Length: 2\r\nX-Note: a\(nul)",                  // a NUL alone at the end of the line
            "Content-Length: 2\r\nX-Note:\(nul)b",
            "Content-Length: 2\r\nX-Note: a\rb",                     // a CR that ends no line
            "Content-Length: 2\r\nX-Note: a\r\n b",                 // folded (obs-fold)
        ]
        for head in heads {
            let answer = try server.exchange("POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(head)\r\n\r\n{}\(smuggled)")
            #expect(statuses(answer) == [400], "\(head.debugDescription): \(answer)")
            #expect(answer.contains("Connection: close"), "\(head.debugDescription)")
        }
        #expect(try server.client().get("/units/smuggled").status == 404)
        // Heads the check must not refuse: bare LF line ends, spaces around values, an empty value, no fields.
        let body = "{\"name\":\"Clean\",\"status\":\"healthy\"}"
        let clean = try server.exchange("PUT /units/clean HTTP/1.1\nHost: x\nX-Empty:\r\nX-Spaced:   a b  \r\nContent-Type: application/json\t\n"
                                 + "Connection: close\nContent-Length: \(body.utf8.count)\n\n\(body)")
        #expect(statuses(clean).first == 201, "\(clean)")
        #expect(try server.client().get("/units/clean").status == 200)
        #expect(statuses(try server.exchange("GET /health HTTP/1.0\r\n\r\n")) == [200])
    }

    /// The asterisk form is for OPTIONS only (RFC 9112 §3.2.4): `GET *` answered the page with 200.
    @Test func theAsteriskTargetIsForOptionsOnly() throws {
        let server = try TestHerald()
        defer { server.stop() }
        for method in ["GET", "HEAD", "POST", "PUT"] {
            let answer = try server.exchange("\(method) * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            #expect(statuses(answer) == [400], "\(method) *: \(answer)")
        }
        let options = try server.exchange("OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(statuses(options).first.map { $0 < 300 } == true, "\(options)")
    }

    /// A HEAD of a stream gets the head a GET would, framing and all, and no body: it answered
    /// `Content-Length: 0`, which a proxy passes on (nginx did over HTTP/2) although the GET has none.
    @Test func aHeadOfAStreamHasTheGetsFramingAndNoBody() throws {
        let server = try TestHerald()
        defer { server.stop() }
        for (version, framing) in [("1.1", "Transfer-Encoding: chunked"), ("1.0", "Connection: close")] {
            let answer = try server.exchange("HEAD /currency/events HTTP/\(version)\r\nHost: x\r\n\r\n")
            #expect(statuses(answer) == [200], "\(version): \(answer)")
            #expect(answer.contains("Content-Type: text/event-stream") && answer.contains(framing), "\(version): \(answer)")
            #expect(!answer.lowercased().contains("content-length"), "\(version): \(answer)")
            #expect(answer.hasSuffix("\r\n\r\n") && answer.components(separatedBy: "\r\n\r\n").count == 2,
                    "the head alone, then the connection closes: \(answer.debugDescription)")
        }
        #expect(try server.client().get("/currency").status == 200)
    }

    @Test func unknownTransferCodingsAreAnsweredAndClosed() throws {
        let server = try TestHerald()
        defer { server.stop() }
        for coding in ["xchunked", "gzip, chunked", "chunked, identity", "identity"] {
            let answer = try server.exchange("POST /notifications/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\n\(smuggled)")
            #expect(statuses(answer) == [501], "\(coding): \(answer)")
        }
        #expect(try server.client().get("/units/smuggled").status == 404)
    }

    @Test func hostIsRequiredOnceOnHTTP11() throws {
        let server = try TestHerald()
        defer { server.stop() }
        #expect(statuses(try server.exchange("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")) == [400])
        #expect(statuses(try server.exchange("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n")) == [400])
        let http10 = try server.exchange("GET /health HTTP/1.0\r\n\r\n")
        #expect(http10.hasPrefix("HTTP/1.1 200"), "HTTP/1.0 needs no Host: \(http10)")
        let absolute = try server.exchange("GET http://127.0.0.1:\(server.port)/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(statuses(absolute) == [200], "absolute-form target: \(absolute)")
    }

    @Test func otherHostsAreMisdirectedWhenHostsAreListed() throws {
        let server = try TestHerald(allowedHosts: ["localhost", "127.0.0.1"])
        defer { server.stop() }
        let evil = try server.exchange("PUT /units/evil HTTP/1.1\r\nHost: evil.example:\(server.port)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        #expect(statuses(evil) == [421], "\(evil)")
        #expect(statuses(try server.exchange("GET /health HTTP/1.1\r\nHost: localhost:\(server.port)\r\nConnection: close\r\n\r\n")) == [200])
        #expect(statuses(try server.exchange("GET /health HTTP/1.1\r\nHost: localhost:1\r\nConnection: close\r\n\r\n")) == [421])
        #expect(try server.client().get("/units/evil").status == 404)
    }

    @Test func encodedNulAndSlashStayInsideTheirSegment() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let id = try server.auction()
        for target in ["/health%00/x", "/auctions/\(id)%00junk", "/auctions/%zz"] {
            #expect(statuses(try server.exchange("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) == [400], "\(target)")
        }
        #expect(try server.client().get("/auctions/\(id)%2Fbids").status == 404)
        #expect(try server.client().get("/auctions/\(id)/bids").status == 200)
    }

    @Test func manyQueryArgumentsAndLongTargetsAreAnswered() throws {
        let server = try TestHerald()
        defer { server.stop() }
        for count in [120, 1000, 3000] {
            let query = Array(repeating: "x=a", count: count).joined(separator: "&")
            let answer = try server.exchange("GET /health?\(query) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(statuses(answer) == [count * 4 > 8192 ? 414 : 200], "\(count) arguments: \(answer.prefix(200))")
        }
        // The documented maximum: 64 topics of 100-character notification names.
        let names = (0..<64).map { "topic=notifications/" + String(repeating: Character(String($0 % 10)), count: 98) + "\($0 % 10)x" }
        let answer = try server.exchange("GET /events?\(names.joined(separator: "&"))&snapshot=false HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "64 long topics: \(answer.prefix(300))")
    }
}

/// Header values that once reached an index or a conversion that traps.
@Suite struct HostileHeaderTests {
    @Test func acceptLanguageOfAnyShapeIsServed() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        for value in [";", ";;", ";, en", ";q=1", ", en", ",", " ", "de;q=0.5", "ja", "*", String(repeating: "a-", count: 500)] {
            let response = try server.client().get("/trips/1", headers: [("Accept-Language", value)])
            #expect(response.status == 200, "Accept-Language: \(value)")
        }
        let german = try server.client().get("/trips/1", headers: [("Accept-Language", ";, de-DE")])
        #expect((german.json["display"] as? [String: Any])?["locale"] as? String == "de_DE")
        let japanese = try server.client().get("/trips/1?locale=ja")
        #expect((japanese.json["display"] as? [String: Any])?["delay"] as? String == "5 minutes delay")
    }

    @Test func strictJSONBodiesAndIntegers() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("/units/a", #"{"name":"A","status":"ok",}"#).status == 400)
        #expect(try client.put("/units/a", #"{"name":"A","name":"B"}"#).status == 400)
        let id = try server.auction()
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":1e-400}"#).status == 422)
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":2.5}"#).status == 422)
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":5.0}"#).status == 201, "5.0 is the integer 5")
        #expect(try client.get("/units/a").status == 404)
    }

    @Test func tripsStayReadableAtTheEndsOfTheCalendar() throws {
        let directory = temporaryDirectory("herald-wire")
        defer { removeTemporaryDirectory(directory) }
        do {
            let server = try TestHerald(examples: true, dataDirectory: directory)
            defer { server.stop() }
            let client = server.client()
            #expect(try client.patch("/trips/1", #"{"actualDeparture":"9999-12-31T23:59:59Z"}"#).status == 200)
            #expect(try client.post("/trips/1/delay", #"{"deltaSeconds":86400}"#).status == 422)
            #expect(try client.patch("/trips/1", #"{"departure":"2015-10-09T13:00:00Z","actualDeparture":"2015-10-09T13:00:00Z"}"#).status == 422)
        }
        let restarted = try TestHerald(dataDirectory: directory)
        defer { restarted.stop() }
        #expect(try restarted.client().get("/trips/1").json["actualDeparture"] as? String == "9999-12-31T23:59:59Z")
    }
}

@Suite struct QueryValueTests {
    @Test func anyStringIsAQueryValueAndEachParameterChecksItsOwn() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let trips = try server.client().get("/trips?locale=0%00H%14%C3%94")
        #expect(trips.status == 200, "an odd locale falls back to English")
        #expect(try server.client().get("/events?topic=currency%00").status == 400, "a topic is checked")
        #expect(try server.client().get("/units/sc%00out").status == 400, "a NUL in the path is refused")
    }
}
