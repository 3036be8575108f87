import Foundation
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// A change sent again with the same `Idempotency-Key` is not made again: the first answer comes back.
@Suite struct IdempotencyTests {
    func bid(_ client: HTTPClient, _ auction: String, amount: Int, key: String?) throws -> TestResponse {
        try client.request("POST", "/auctions/\(auction)/bids", json: #"{"bidder":"ann","amount":\#(amount)}"#,
                           headers: key.map { [("Idempotency-Key", $0)] } ?? [])
    }

    /// Header fields of one name read as their values joined with commas (swift-http-types, RFC 9110
    /// §5.3): two keys are no valid key, and the change is refused, not made under either.
    @Test func twoKeysInOneRequestAreRefused() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let auction = try server.auction(countdown: 3600)
        let response = try client.request("POST", "/auctions/\(auction)/bids", json: #"{"bidder":"ann","amount":10}"#,
                                          headers: [("Idempotency-Key", "first"), ("Idempotency-Key", "second")])
        #expect(response.status == 400, "\(response.text)")
        #expect(try client.get("/auctions/\(auction)").json["bidCount"] as? Int == 0)
    }

    @Test func aRetriedBidIsAnsweredAgainAndMadeOnce() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let auction = try server.auction(countdown: 3600)
        let watcher = try server.stream("/auctions/\(auction)/events?snapshot=false")
        let first = try bid(client, auction, amount: 10, key: "bid-7f3a")
        #expect(first.status == 201)
        #expect(first.header("Idempotency-Replayed") == nil)
        let again = try bid(client, auction, amount: 10, key: "bid-7f3a")
        #expect(again.status == 201, "\(again.text)")
        #expect(again.text == first.text, "the first answer, byte for byte")
        #expect(again.header("Idempotency-Replayed") == "true")
        #expect(again.header("Content-Type") == first.header("Content-Type"))
        #expect(try client.get("/auctions/\(auction)").json["bidCount"] as? Int == 1)
        _ = try watcher.next(named: "bid")
        // Observers saw one bid: the next bid they see is a later one.
        #expect(try bid(client, auction, amount: 20, key: nil).status == 201)
        #expect((try watcher.next(named: "bid").json["bid"] as? [String: Any])?["amount"] as? Int == 20, "observers saw one bid of 10")
        // Without a key the same bid is a new one, refused at this price (below 20).
        #expect(try bid(client, auction, amount: 10, key: nil).status == 409)
    }

    @Test func aKeyUsedForAnotherRequestIsRefusedAndChangesNothing() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let auction = try server.auction(countdown: 3600)
        #expect(try bid(client, auction, amount: 10, key: "k1").status == 201)
        let other = try bid(client, auction, amount: 20, key: "k1")
        #expect(other.status == 422)
        #expect(other.header("Content-Type") == "application/problem+json")
        #expect(other.text.contains("Idempotency-Key"), "\(other.text)")
        let unit = try client.request("PUT", "/units/u1", json: #"{"name":"U","status":"healthy"}"#, headers: [("Idempotency-Key", "k1")])
        #expect(unit.status == 422, "another path is another request")
        #expect(try client.get("/auctions/\(auction)").json["price"] as? Int == 10)
        #expect(try client.get("/units/u1").status == 404)
        for key in ["", String(repeating: "k", count: 256), "has space", "naïve"] {
            let refused = try client.request("PUT", "/units/u2", json: #"{"name":"U","status":"healthy"}"#, headers: [("Idempotency-Key", key)])
            #expect(refused.status == 400, "\(key.prefix(20))")
        }
        #expect(try client.get("/units/u2").status == 404)
    }

    /// The query is part of the request a key stands for, and a token with no subject may not send a
    /// key (all such tokens would share one key space, so one client could replay another's answer).
    @Test func theQueryCountsAndATokenWithoutSubjectMayNotSendAKey() async throws {
        let open = try TestHerald()
        defer { open.stop() }
        let client = open.client()
        let unit = #"{"name":"U","status":"healthy"}"#
        #expect(try client.request("PUT", "/units/q?a=1", json: unit, headers: [("Idempotency-Key", "q1")]).status == 201)
        #expect(try client.request("PUT", "/units/q?a=1", json: unit, headers: [("Idempotency-Key", "q1")]).header("Idempotency-Replayed") == "true")
        #expect(try client.request("PUT", "/units/q?a=2", json: unit, headers: [("Idempotency-Key", "q1")]).status == 422)

        let secured = try await TestHerald.secured()
        defer { secured.stop() }
        let anonymous = try await Tokens.make(sub: nil, publish: ["*"])
        let refused = try secured.client().request("PUT", "/units/anon", json: unit,
                                                   headers: Tokens.bearer(anonymous) + [("Idempotency-Key", "k")])
        #expect(refused.status == 400)
        #expect(refused.text.contains("sub"), "\(refused.text)")
        #expect(try secured.client().get("/units/anon").status == 404, "nothing was made")
        #expect(try secured.client().request("PUT", "/units/anon", json: unit, headers: Tokens.bearer(anonymous)).status == 201,
                "without a key the change is made")
    }

    /// A refused change keeps nothing: the same key may be sent again and, once the change can be
    /// made, it is.
    @Test func aRefusedChangeKeepsNoAnswer() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let auction = try server.auction(countdown: 3600)
        #expect(try bid(client, auction, amount: 10, key: nil).status == 201)
        #expect(try bid(client, auction, amount: 10, key: "late").status == 409)
        #expect(try bid(client, auction, amount: 10, key: "late").status == 409, "refused again, not replayed")
    }

    /// The answer is kept in the store with the change: after a restart a retry still finds it.
    @Test func aKeptAnswerOutlivesARestart() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        var first = ""
        do {
            let server = try TestHerald(dataDirectory: directory)
            defer { server.stop() }
            let created = try server.client().request("PUT", "/units/medic", json: #"{"name":"Medic","status":"wounded"}"#,
                                                      headers: [("Idempotency-Key", "unit-medic-1")])
            #expect(created.status == 201)
            first = created.text
            server.stop()
        }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("/units/medic", #"{"name":"Medic","status":"dead"}"#).status == 200)
        let retried = try client.request("PUT", "/units/medic", json: #"{"name":"Medic","status":"wounded"}"#,
                                         headers: [("Idempotency-Key", "unit-medic-1")])
        #expect(retried.status == 201 && retried.text == first)
        #expect(retried.header("Location") == "/units/medic")
        #expect(try client.get("/units/medic").json["status"] as? String == "dead", "the retry changed nothing")
    }
}
