import Foundation
import HeraldAuth
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import JWTKit
import Testing

/// Tokens for the tests, signed with jwt-kit through `TokenIssuer`.
enum Tokens {
    static let secret = "herald-test-secret-0123456789abcdef"

    static func key() async throws -> TokenKey { try await TokenKey.secret(secret) }

    static func make(signedWith key: TokenKey? = nil, sub: String? = "ann", publish: [String] = ["*"], subscribe: [String] = ["*"],
                     admin: Bool = false, expires: Date = Date().addingTimeInterval(3600), notBefore: Date? = nil) async throws -> String {
        let claims = TokenClaims(subject: sub, expires: expires, notBefore: notBefore,
                                 grants: Grants(publish: publish, subscribe: subscribe, admin: admin))
        let signer = if let key { key } else { try await Self.key() }
        return try await TokenIssuer(key: signer).sign(claims)
    }

    /// A token whose header and payload are these JSON texts, and whose signature is `signature`.
    static func forged(header: String, payload: String, signature: String = "") -> String {
        [header, payload].map { Data($0.utf8).base64URL }.joined(separator: ".") + "." + signature
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer " + token)] }

    /// A token of these JSON texts, validly signed with `secret` (HS256): claims as any issuer may write them.
    static func signed(header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String) async throws -> String {
        let input = [header, payload].map { Data($0.utf8).base64URL }.joined(separator: ".")
        let signature = try await key().sign(Array(input.utf8))
        return input + "." + Data(signature).base64URL
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension TestHerald {
    /// A server that needs tokens signed with `Tokens.secret` (or `key`).
    static func secured(key: TokenKey? = nil, publicStreams: Bool = false, examples: Bool = true, clock: ManualClock? = nil,
                        configure: (inout HeraldConfiguration) -> Void = { _ in }) async throws -> TestHerald {
        let key = if let key { key } else { try await Tokens.key() }
        return try TestHerald(clock: clock, examples: examples) { configuration in
            configuration.tokenKey = key
            configuration.publicStreams = publicStreams
            configure(&configuration)
        }
    }
}

@Suite struct AuthorizationTests {
    /// The example auction's price, read without a token (reads are open).
    func price(_ client: HTTPClient) throws -> Int? { try client.get("/auctions/1").json["price"] as? Int }

    @Test func aChangeWithoutATokenIs401WithABearerChallengeAndChangesNothing() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let admin = Tokens.bearer(try await Tokens.make(sub: "admin"))
        let before = try client.get("/subjects", headers: admin).text
        for (method, path, body) in [("POST", "/auctions/1/bids", #"{"bidder":"ann","amount":500}"#), ("PUT", "/currency", #"{"default":"euro"}"#),
                                     ("PUT", "/units/scout", #"{"name":"S","status":"dead"}"#), ("DELETE", "/units/scout", ""),
                                     ("POST", "/notifications/door", #"{"payload":1}"#), ("POST", "/auctions", #"{"item":"x","countdownSeconds":5}"#)] {
            let response = try client.request(method, path, json: body.isEmpty ? nil : body)
            #expect(response.status == 401, "\(method) \(path)")
            #expect(response.header("WWW-Authenticate") == #"Bearer realm="herald""#)
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try price(client) == 100)
        #expect(try client.get("/currency").json["default"] as? String == "dollar")
        #expect(try client.get("/units/scout").json["status"] as? String == "healthy")
        #expect(try client.get("/subjects", headers: admin).text == before)
    }

    /// With a key, `/subjects` names and counts a subject only for a token that may watch it; a
    /// client without a token gets the totals alone, and a token that does not check out is 401.
    @Test func subjectsUnderAKeyShowOnlyWhatTheTokenMayWatch() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let watcher = try await Tokens.make(sub: "ann", subscribe: ["notifications/deal.*"])
        let stream = try server.stream("/notifications/deal.acme-buyout/events", headers: Tokens.bearer(watcher))
        _ = try stream.awaitHead()
        let topics = { (headers: [(String, String)]) throws -> [String] in
            (try client.get("/subjects", headers: headers).json["subjects"] as? [[String: Any]] ?? []).compactMap { $0["topic"] as? String }
        }
        let anonymous = try client.get("/subjects").json
        #expect((anonymous["subjects"] as? [Any])?.isEmpty == true, "no names without a token: \(anonymous)")
        let totals = anonymous["totals"] as? [String: Any]
        #expect((totals?["subjects"] as? Int ?? 0) > 1 && (totals?["observers"] as? Int) == 1, "the totals: \(anonymous)")
        #expect(try topics(Tokens.bearer(watcher)) == ["notifications/deal.acme-buyout"])
        let all = try topics(Tokens.bearer(try await Tokens.make(sub: "admin")))
        #expect(all.contains("notifications/deal.acme-buyout") && all.contains("currency"))
        #expect(try topics(Tokens.bearer(try await Tokens.make(sub: "bob", subscribe: ["currency"]))) == ["currency"])
        #expect(try client.get("/subjects", headers: Tokens.bearer("not.a.token")).status == 401)
    }

    @Test func badTokensAre401InvalidTokenAndChangeNothing() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let otherKey = try await TokenKey.secret("another-secret-of-thirty-two-bytes!")
        let payload = #"{"sub":"ann","exp":\#(Int(Date().timeIntervalSince1970) + 3600),"herald":{"publish":["*"]}}"#
        let tokens: [(String, String)] = [
            ("expired", try await Tokens.make(expires: Date().addingTimeInterval(-5))),
            ("not yet valid", try await Tokens.make(notBefore: Date().addingTimeInterval(600))),
            ("wrong key", try await Tokens.make(signedWith: otherKey)),
            ("alg none", Tokens.forged(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload)),
            ("alg none, signature kept", Tokens.forged(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload, signature: "abc")),
            ("no exp", Tokens.forged(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"ann"}"#, signature: "abc")),
            ("garbage", "not-a-token"),
            ("tampered payload", try Self.tampered(try await Tokens.make(publish: ["units/*"]))),
        ]
        for (name, token) in tokens {
            let response = try client.request("POST", "/auctions/1/bids", json: #"{"amount":500}"#, headers: Tokens.bearer(token))
            #expect(response.status == 401, "\(name)")
            #expect(response.header("WWW-Authenticate") == #"Bearer realm="herald", error="invalid_token""#, "\(name)")
            #expect((response.json["detail"] as? String)?.isEmpty == false)
        }
        #expect(try price(client) == 100)
        #expect(try client.get("/auctions/1/bids").json["bids"] as? [Any] == nil || (try client.get("/auctions/1/bids").json["bids"] as? [Any])?.isEmpty == true)
    }

    /// The token with its payload's `units/*` widened to `*`, and the signature left as it was.
    static func tampered(_ token: String) throws -> String {
        let parts = token.split(separator: ".").map(String.init)
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let payload = String(decoding: try #require(Data(base64Encoded: base64)), as: UTF8.self)
        let widened = payload.replacingOccurrences(of: #"units\/*"#, with: "*")
        try #require(widened != payload)
        return [parts[0], Data(widened.utf8).base64URL, parts[2]].joined(separator: ".")
    }

    @Test func aTokenSignedWithTheServersPublicKeyAsAnHMACSecretIsRefused() async throws {
        let privateKey = ES256PrivateKey()
        let publicPEM = privateKey.publicKey.pemRepresentation
        let server = try await TestHerald.secured(key: try await TokenKey.publicKey(pem: publicPEM))
        defer { server.stop() }
        let client = server.client()
        // The classic confusion: HS256 with the public key's text as the secret.
        let forged = try await Tokens.make(signedWith: try await TokenKey.secret(publicPEM))
        let refused = try client.request("POST", "/auctions/1/bids", json: #"{"amount":500}"#, headers: Tokens.bearer(forged))
        #expect(refused.status == 401)
        #expect((refused.json["detail"] as? String)?.contains("ES256") == true)
        #expect(try price(client) == 100)
        // The real private key's token goes through.
        let real = try await Tokens.make(signedWith: try await TokenKey.privateKey(pem: privateKey.pemRepresentation))
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#, headers: Tokens.bearer(real)).status == 201)
        #expect(try price(client) == 500)
    }

    @Test func anRS256KeyChecksRS256TokensAndNothingElse() async throws {
        let keys = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/keys")
        let publicPEM = try String(contentsOf: keys.appendingPathComponent("rs256-test-public.pem"), encoding: .utf8)
        let privatePEM = try String(contentsOf: keys.appendingPathComponent("rs256-test-private.pem"), encoding: .utf8)
        let key = try await TokenKey.publicKey(pem: publicPEM)
        #expect(key.name == "RS256")
        let server = try await TestHerald.secured(key: key)
        defer { server.stop() }
        let client = server.client()
        let forged = try await Tokens.make(signedWith: try await TokenKey.secret(publicPEM))
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#, headers: Tokens.bearer(forged)).status == 401)
        let otherES256 = try await Tokens.make(signedWith: try await TokenKey.privateKey(pem: ES256PrivateKey().pemRepresentation))
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#, headers: Tokens.bearer(otherES256)).status == 401)
        #expect(try price(client) == 100)
        let real = try await Tokens.make(signedWith: try await TokenKey.privateKey(pem: privatePEM))
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#, headers: Tokens.bearer(real)).status == 201)
        #expect(try price(client) == 500)
    }

    @Test func aTokenMayOnlyPublishWhereItsPatternsSay() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let unitsOnly = try await Tokens.make(publish: ["units/scout", "notifications/door.*"])
        let bid = try client.request("POST", "/auctions/1/bids", json: #"{"amount":500}"#, headers: Tokens.bearer(unitsOnly))
        #expect(bid.status == 403)
        #expect(bid.json["topic"] as? String == "auctions/1")
        #expect(bid.header("WWW-Authenticate") == nil)
        #expect(try client.request("PUT", "/units/other", json: #"{"name":"O","status":"dead"}"#, headers: Tokens.bearer(unitsOnly)).status == 403)
        #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(unitsOnly)).status == 403)
        #expect(try client.request("POST", "/notifications/window", json: #"{"payload":1}"#, headers: Tokens.bearer(unitsOnly)).status == 403)
        #expect(try price(client) == 100)
        #expect(try client.get("/units/other").status == 404)
        #expect(try client.request("PUT", "/units/scout", json: #"{"name":"S","status":"dead"}"#, headers: Tokens.bearer(unitsOnly)).status == 200)
        #expect(try client.request("POST", "/notifications/door.front", json: #"{"payload":1}"#, headers: Tokens.bearer(unitsOnly)).status == 202)
    }

    @Test func aBidsBidderIsTheTokensSubject() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let ann = try await Tokens.make(sub: "ann", publish: ["auctions/*"])
        let asBob = try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"bob","amount":500}"#, headers: Tokens.bearer(ann))
        #expect(asBob.status == 403)
        #expect(try price(client) == 100)
        // The bidder is required either way, as the schema says.
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"amount":500}"#, headers: Tokens.bearer(ann)).status == 422)
        let named = try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":600}"#, headers: Tokens.bearer(ann))
        #expect(named.status == 201)
        #expect((named.json["bid"] as? [String: Any])?["bidder"] as? String == "ann")
        let nobody = try await Tokens.make(sub: nil, publish: ["auctions/*"])
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":700}"#, headers: Tokens.bearer(nobody)).status == 403)
        #expect(try price(client) == 600)
        // A token may create auctions (auctions/*) and a write elsewhere is still checked by topic.
        #expect(try client.request("POST", "/auctions", json: #"{"item":"Clock","countdownSeconds":5}"#, headers: Tokens.bearer(ann)).status == 201)
    }

    @Test func aStreamNeedsATokenThatMaySubscribeToEveryTopic() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let none = try client.get("/auctions/1/events")
        #expect(none.status == 401)
        #expect(none.header("WWW-Authenticate") == #"Bearer realm="herald""#)
        // Without a token a subject's existence is not told: 401, not 404.
        #expect(try client.get("/auctions/999/events").status == 401)
        let auctionsOnly = try await Tokens.make(subscribe: ["auctions/*"])
        #expect(try client.get("/units/scout/events", headers: Tokens.bearer(auctionsOnly)).status == 403)
        let mixed = try client.get("/events?topic=auctions/1&topic=currency", headers: Tokens.bearer(auctionsOnly))
        #expect(mixed.status == 403)
        #expect(mixed.json["topic"] as? String == "currency")
        let expired = try await Tokens.make(expires: Date().addingTimeInterval(-1))
        #expect(try client.get("/auctions/1/events", headers: Tokens.bearer(expired)).status == 401)
        #expect(try server.observers(of: "auctions/1") == 0)
        let stream = try server.stream("/events?topic=auctions/1", headers: Tokens.bearer(auctionsOnly))
        #expect(try stream.next(2).map(\.event) == ["stream", "snapshot"])
    }

    @Test func aStreamTakesItsTokenAsACookieOrAQueryArgumentButAChangeDoesNot() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        let token = try await Tokens.make()
        let byCookie = try server.stream("/auctions/1/events", headers: [("Cookie", "theme=dark; herald_token=\(token)")])
        #expect(try byCookie.next(2).map(\.event) == ["stream", "snapshot"])
        let byQuery = try server.stream("/auctions/1/events?access_token=\(token)")
        #expect(try byQuery.next(2).map(\.event) == ["stream", "snapshot"])
        // A cookie would let any page a user visits change state in their name; a URL ends up in logs.
        #expect(try client.request("POST", "/auctions/1/bids", json: #"{"amount":500}"#, headers: [("Cookie", "herald_token=\(token)")]).status == 401)
        #expect(try client.request("POST", "/auctions/1/bids?access_token=\(token)", json: #"{"amount":500}"#).status == 401)
        #expect(try price(client) == 100)
    }

    /// The server's time is a clock the test moves: the stream ends once 60 s have passed on it, and
    /// not a second before; nothing waits for real time to pass.
    @Test func aStreamEndsWhenItsTokenExpiresAndResumesWithAFreshOne() async throws {
        let clock = ManualClock(now: Date())
        let server = try await TestHerald.secured(clock: clock) { $0.http.streamClock = clock }
        defer { server.stop() }
        let client = server.client()
        let writer = try await Tokens.make(publish: ["*"], expires: clock.now.addingTimeInterval(3600))
        // An auction whose countdown outlasts the minute the clock is moved by.
        let created = try client.request("POST", "/auctions", json: #"{"item":"lamp","countdownSeconds":3600}"#, headers: Tokens.bearer(writer))
        let id = try #require(created.json["id"] as? String)
        #expect(try client.request("POST", "/auctions/\(id)/bids", json: #"{"bidder":"ann","amount":200}"#, headers: Tokens.bearer(writer)).status == 201)
        let shortLived = try await Tokens.make(expires: clock.now.addingTimeInterval(60))
        let stream = try server.stream("/auctions/\(id)/events", headers: Tokens.bearer(shortLived))
        #expect(stream.head?.status == 200)
        let snapshot = try stream.next(named: "snapshot")
        let lastId = try #require(snapshot.id)
        clock.advance(by: 58)
        #expect(!stream.awaitEnd(timeout: 2), "the stream ended before its token")
        clock.advance(by: 3)
        #expect(stream.awaitEnd(timeout: 30), "the stream outlived its token")
        // Missed while away, then back with a fresh token and Last-Event-ID: exactly what was missed.
        #expect(try client.request("POST", "/auctions/\(id)/bids", json: #"{"bidder":"ann","amount":300}"#, headers: Tokens.bearer(writer)).status == 201)
        let fresh = try await Tokens.make(expires: clock.now.addingTimeInterval(3600))
        let resumed = try server.stream("/auctions/\(id)/events", headers: Tokens.bearer(fresh) + [("Last-Event-ID", lastId)])
        let missed = try resumed.next(named: "bid")
        #expect(missed.json["amount"] as? Int == 300 || (missed.json["bid"] as? [String: Any])?["amount"] as? Int == 300)
        #expect(Int(missed.id ?? "") ?? 0 > Int(lastId) ?? 0)
    }

    /// "Never expires" written as a huge `exp` is read as the end of the year 9999: writes and streams
    /// work, and the server lives on (it died at the first stream open, converting the time to Int64).
    @Test func anExpFarBeyondTheYear9999IsNoExpiryAndNoCrash() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let client = server.client()
        for (round, exp) in ["9999999999999999999", "1e300", "1.7976931348623157e308", "253402300800"].enumerated() {
            let token = try await Tokens.signed(payload: #"{"sub":"ann","exp":\#(exp),"herald":{"publish":["*"],"subscribe":["*"]}}"#)
            let stream = try server.stream("/auctions/1/events", headers: Tokens.bearer(token))
            #expect(stream.head?.status == 200, "exp \(exp)")
            #expect(try stream.next().event == "stream", "a stream with a token is told its id and end first")
            #expect(try stream.next().event == "snapshot")
            let amount = 1000 + round
            #expect(try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":\#(amount)}"#, headers: Tokens.bearer(token)).status == 201)
            #expect((try stream.next(named: "bid").json["bid"] as? [String: Any])?["amount"] as? Int == amount)
        }
        #expect(try client.get("/health/live").status == 200)
    }

    /// RFC 7515 §4.1.11: a critical extension Herald does not understand refuses the token. RFC 7519 §4:
    /// a claim named twice refuses it (the first `exp` won before: a later one could not end it).
    @Test func aCriticalExtensionOrADuplicateClaimIsRefused() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let later = Int(Date().timeIntervalSince1970) + 3600
        let tokens = [
            ("crit", try await Tokens.signed(header: #"{"alg":"HS256","typ":"JWT","crit":["zzz"],"zzz":1}"#,
                                             payload: #"{"sub":"ann","exp":\#(later),"herald":{"publish":["*"]}}"#)),
            ("two exp", try await Tokens.signed(payload: #"{"sub":"ann","exp":\#(later),"exp":1,"herald":{"publish":["*"]}}"#)),
            ("two sub", try await Tokens.signed(payload: #"{"sub":"ann","sub":"bob","exp":\#(later),"herald":{"publish":["*"]}}"#)),
            ("two alg", try await Tokens.signed(header: #"{"alg":"HS256","alg":"none"}"#, payload: #"{"sub":"ann","exp":\#(later),"herald":{"publish":["*"]}}"#)),
        ]
        for (name, token) in tokens {
            let response = try server.client().request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":900}"#, headers: Tokens.bearer(token))
            #expect(response.status == 401, "\(name)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        let fine = try await Tokens.signed(payload: #"{"sub":"ann","exp":\#(later),"herald":{"publish":["*"]}}"#)
        let accepted = try server.client().request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":900}"#, headers: Tokens.bearer(fine))
        #expect(accepted.status == 201, "\(accepted.text)")
    }

    @Test func publicStreamsNeedNoTokenButChangesStillDo() async throws {
        let server = try await TestHerald.secured(publicStreams: true)
        defer { server.stop() }
        let stream = try server.stream("/auctions/1/events")
        #expect(try stream.next().event == "snapshot")
        #expect(try server.client().request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#).status == 401)
    }

    @Test func openHeraldTakesTheBidderFromTheBody() async throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let bid = try server.client().post("/auctions/1/bids", #"{"bidder":"bob","amount":500}"#)
        #expect(bid.status == 201)
        #expect((bid.json["bid"] as? [String: Any])?["bidder"] as? String == "bob")
    }
}
