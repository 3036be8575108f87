import Foundation
import HeraldAuth
import HeraldServer
import HeraldTestSupport
import Testing

/// An administrator revokes tokens (`POST /revocations`): by user, by `jti`, or every token issued
/// before a time. Covered streams end with `revoked`; covered tokens are refused everywhere; others
/// go on; a revocation outlives a restart and is forgotten after its `until`.
@Suite struct RevocationTests {
    /// A token of `sub` with these `iat` and `jti` (nil: without the claim).
    static func token(sub: String?, issued: Date?, jti: String?, admin: Bool = false) async throws -> String {
        let claims = TokenClaims(subject: sub, expires: Date().addingTimeInterval(3600), issuedAt: issued, id: jti,
                                 grants: Grants(publish: ["*"], subscribe: ["*"], admin: admin))
        return try await TokenIssuer(key: try await Tokens.key()).sign(claims)
    }

    /// Whether `stream` shows the currency `value` within its next few currency events.
    static func sees(_ stream: SSEClient?, _ value: String) -> Bool {
        for _ in 0..<5 {
            guard let event = try? stream?.next(named: "currency") else { return false }
            if event.json["default"] as? String == value { return true }
        }
        return false
    }

    static func revoke(_ server: TestHerald, _ body: String, as admin: String) throws -> TestResponse {
        try server.client().request("POST", "/revocations", json: body, headers: Tokens.bearer(admin))
    }

    @Test func revokingByUserTokenAndTimeEndsTheCoveredStreamsAndRefusesTheirTokensAcrossARestart() async throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let earlier = Date().addingTimeInterval(-60)
        // Issued later than the revocation by time below: the administrator's own token stays good.
        let admin = try await Self.token(sub: "root", issued: Date().addingTimeInterval(60), jti: "root", admin: true)
        let ann = try await Self.token(sub: "ann", issued: earlier, jti: "ann-1")
        let bob = try await Self.token(sub: "bob", issued: earlier, jti: "bob-1")
        let bobSecond = try await Self.token(sub: "bob", issued: earlier, jti: "bob-2")
        let carl = try await Self.token(sub: "carl", issued: nil, jti: nil)
        let dana = try await Self.token(sub: "dana", issued: Date().addingTimeInterval(30), jti: "dana-1")
        do {
            let server = try await TestHerald.secured { $0.dataDirectory = directory }
            defer { server.stop() }
            let client = server.client()
            var streams: [String: SSEClient] = [:]
            for (name, token) in [("ann", ann), ("bob", bob), ("carl", carl), ("dana", dana)] {
                streams[name] = try server.stream("/currency/events", headers: Tokens.bearer(token))
                #expect(try streams[name]?.next(named: "stream").json["stream"] is String)
            }
            defer { for stream in streams.values { stream.close() } }

            // Only an administrator, with a bearer token.
            #expect(try Self.revoke(server, #"{"sub":"ann"}"#, as: bob).status == 403)
            #expect(try client.request("POST", "/revocations", json: #"{"sub":"ann"}"#).status == 401)
            #expect(try client.get("/revocations", headers: Tokens.bearer(bob)).status == 403)
            // Bad bodies change nothing.
            for body in [#"{"sub":"ann","jti":"x"}"#, #"{"subject":"ann"}"#, "{}", #"{"jti":"x","issuedBefore":"2026-01-01T00:00:00Z"}"#,
                         #"{"sub":"ann","until":"2001-01-01T00:00:00Z"}"#, #"{"sub":7}"#] {
                let refused = try Self.revoke(server, body, as: admin)
                #expect(refused.status == 422 && refused.header("Content-Type") == "application/problem+json", "\(body): \(refused.text)")
            }
            #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(ann)).status == 200)

            // By user: ann's stream ends with `revoked`, her token is refused; the others go on.
            let byUser = try Self.revoke(server, #"{"sub":"ann"}"#, as: admin)
            #expect(byUser.status == 201 && byUser.json["sub"] as? String == "ann" && byUser.json["until"] is String, "\(byUser.text)")
            let revoked = try #require(try streams["ann"]?.next(named: "revoked"))
            #expect((revoked.json["reason"] as? String)?.contains("ann") == true && revoked.id == nil)
            #expect(streams["ann"]?.awaitEnd() == true)
            let refused = try client.request("PUT", "/currency", json: #"{"default":"dollar"}"#, headers: Tokens.bearer(ann))
            #expect(refused.status == 401 && refused.text.contains("revoked"), "\(refused.text)")
            #expect(try client.get("/currency/events", headers: Tokens.bearer(ann)).status == 401)
            // A token ann is issued after the revocation works.
            let annLater = try await Self.token(sub: "ann", issued: Date().addingTimeInterval(5), jti: "ann-2")
            #expect(try client.request("PUT", "/currency", json: #"{"default":"dollar"}"#, headers: Tokens.bearer(annLater)).status == 200)
            #expect(Self.sees(streams["bob"], "dollar"))

            // By jti: that token alone.
            #expect(try Self.revoke(server, #"{"jti":"bob-1"}"#, as: admin).status == 201)
            #expect(try streams["bob"]?.next(named: "revoked").json["stream"] is String)
            #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(bob)).status == 401)
            #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(bobSecond)).status == 200)

            // By time: every token issued before it, and those that cannot say when (carl's has no iat).
            let now = Date()
            let byTime = try Self.revoke(server, #"{"issuedBefore":"\#(ISO8601DateFormatter().string(from: now))"}"#, as: admin)
            #expect(byTime.status == 201, "\(byTime.text)")
            #expect(try streams["carl"]?.next(named: "revoked").json["stream"] is String)
            #expect(try client.request("PUT", "/currency", json: #"{"default":"dollar"}"#, headers: Tokens.bearer(dana)).status == 200)
            #expect(Self.sees(streams["dana"], "dollar"), "dana's token was issued after it")

            let listed = try client.get("/revocations", headers: Tokens.bearer(admin))
            #expect(listed.status == 200 && (listed.json["revocations"] as? [Any])?.count == 3, "\(listed.text)")
            // Counted once the stream is closed, which may come just after its client read `revoked`.
            #expect(streams["carl"]?.awaitEnd() == true)
            #expect(eventually { (try? client.get("/metrics").text.contains(#"herald_streams_closed_total{reason="revoked"} 3"#)) == true })
        }
        // Stored: after a restart the same tokens are refused, and the later ones are not.
        let again = try await TestHerald.secured { $0.dataDirectory = directory }
        defer { again.stop() }
        let client = again.client()
        for token in [ann, bob, carl] {
            #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(token)).status == 401)
        }
        #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(dana)).status == 200)
    }

    /// A revocation lasts until its `until`, when every token it covers has expired: then it is forgotten.
    @Test func aRevocationIsForgottenAfterItsUntil() async throws {
        let clock = ManualClock(now: Date())
        let server = try await TestHerald.secured(clock: clock)
        defer { server.stop() }
        let admin = try await Self.token(sub: "root", issued: nil, jti: "root", admin: true)
        let ann = try await Self.token(sub: "ann", issued: nil, jti: "ann-1")
        let until = ISO8601DateFormatter().string(from: clock.now.addingTimeInterval(120))
        #expect(try Self.revoke(server, #"{"jti":"ann-1","until":"\#(until)"}"#, as: admin).status == 201)
        let client = server.client()
        #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(ann)).status == 401)
        clock.advance(by: 121)
        #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(ann)).status == 200)
        #expect((try client.get("/revocations", headers: Tokens.bearer(admin)).json["revocations"] as? [Any])?.isEmpty == true)
    }

    /// Replicas: a revocation made on one ends the covered streams another holds, and that one refuses
    /// the token too.
    @Test(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
    func aRevocationReachesEveryReplica() async throws {
        let url = try TestPostgres.database()
        let first = try await TestHerald.secured { $0.postgresURL = url }
        defer { first.stop() }
        let second = try await TestHerald.secured { $0.postgresURL = url }
        defer { second.stop() }
        let admin = try await Self.token(sub: "root", issued: nil, jti: "root", admin: true)
        let (ann, bob, annStream, bobStream) = try await Self.annAndBobWatching(second)
        defer { annStream.close(); bobStream.close() }
        #expect(try Self.revoke(first, #"{"sub":"ann"}"#, as: admin).status == 201)
        #expect(try annStream.next(named: "revoked").json["stream"] is String, "the other replica's stream ends")
        #expect(eventually {
            (try? second.client().request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(ann)).status) == 401
        })
        #expect(try second.client().request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(bob)).status == 200)
        #expect(Self.sees(bobStream, "euro"), "bob's stream goes on")
    }

    /// Ann's and bob's tokens, issued a minute ago, and a stream of each on `server`, told its id.
    static func annAndBobWatching(_ server: TestHerald) async throws -> (ann: String, bob: String, annStream: SSEClient, bobStream: SSEClient) {
        let ann = try await token(sub: "ann", issued: Date().addingTimeInterval(-60), jti: "ann-1")
        let bob = try await token(sub: "bob", issued: Date().addingTimeInterval(-60), jti: "bob-1")
        let annStream = try server.stream("/currency/events", headers: Tokens.bearer(ann))
        let bobStream = try server.stream("/currency/events", headers: Tokens.bearer(bob))
        #expect(try annStream.next(named: "stream").json["stream"] is String)
        #expect(try bobStream.next(named: "stream").json["stream"] is String)
        return (ann, bob, annStream, bobStream)
    }

    /// A revocation whose message a replica missed (its listener, or the sender's, was reconnecting):
    /// here one stored with no message at all. The replica reads the table again every few seconds,
    /// and ends the covered stream then; without the re-read it learned of it only at its next start.
    @Test(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
    func aReplicaThatMissedARevocationsMessageLearnsOfItFromTheStore() async throws {
        let url = try TestPostgres.database()
        let server = try await TestHerald.secured { $0.postgresURL = url }
        defer { server.stop() }
        let (ann, bob, annStream, bobStream) = try await Self.annAndBobWatching(server)
        defer { annStream.close(); bobStream.close() }
        let now = Date().timeIntervalSince1970
        _ = try TestPostgres.run("INSERT INTO herald_revocations (key, issued_before, until) VALUES ('sub:ann', \(now + 1), \(now + 3_600))", on: url)
        let revoked = try annStream.next(named: "revoked", timeout: 15)
        #expect(revoked.json["reason"] as? String == "an administrator revoked the tokens of 'ann'")
        #expect(try server.client().request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(ann)).status == 401)
        #expect(try server.client().request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(bob)).status == 200)
        #expect(Self.sees(bobStream, "euro"), "bob's stream goes on")
    }
}
