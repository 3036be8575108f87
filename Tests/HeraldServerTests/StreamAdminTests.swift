import Foundation
import HeraldTestSupport
import Testing

/// An administrator's view of the open streams (`GET /streams`) and their end (`DELETE /streams/{id}`).
@Suite struct StreamAdminTests {
    @Test func anAdministratorListsTheOpenStreamsAndEndsOne() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let (ann, bob) = (try await Tokens.make(sub: "ann"), try await Tokens.make(sub: "bob"))
        let admin = try await Tokens.make(sub: "root", publish: [], subscribe: [], admin: true)
        let annStream = try server.stream("/auctions/1/events", headers: Tokens.bearer(ann))
        defer { annStream.close() }
        let bobStream = try server.stream("/currency/events", headers: Tokens.bearer(bob))
        defer { bobStream.close() }
        let annID = try #require(try annStream.next(named: "stream").json["stream"] as? String)
        let bobID = try #require(try bobStream.next(named: "stream").json["stream"] as? String)
        let client = server.client()
        func listed(_ query: String) throws -> [[String: Any]] {
            let answer = try client.get("/streams" + query, headers: Tokens.bearer(admin))
            #expect(answer.status == 200 && answer.header("Cache-Control") == "no-store", "\(query): \(answer.text)")
            return answer.json["streams"] as? [[String: Any]] ?? []
        }
        #expect(Set(try listed("").compactMap { $0["stream"] as? String }) == [annID, bobID])
        let anns = try listed("?sub=ann")
        #expect(anns.count == 1 && anns.first?["stream"] as? String == annID && anns.first?["topics"] as? [String] == ["auctions/1"])
        #expect(anns.first?["client"] as? String == "127.0.0.1")
        #expect(try listed("?topic=currency").compactMap { $0["stream"] as? String } == [bobID])
        #expect(try listed("?sub=nobody").isEmpty)
        let first = try client.get("/streams?limit=1", headers: Tokens.bearer(admin))
        #expect((first.json["streams"] as? [Any])?.count == 1 && first.json["next"] is String)
        // Only an administrator, with a bearer token, may see or end streams.
        #expect(try client.get("/streams", headers: Tokens.bearer(ann)).status == 403)
        #expect(try client.get("/streams").status == 401)
        #expect(try client.get("/streams?owner=ann", headers: Tokens.bearer(admin)).status == 400)
        #expect(try client.request("DELETE", "/streams/\(annID)", headers: Tokens.bearer(ann)).status == 403)

        #expect(try client.request("DELETE", "/streams/\(annID)", headers: Tokens.bearer(admin)).status == 204)
        let ended = try annStream.next(named: "ended")
        #expect(ended.json["stream"] as? String == annID && ended.id == nil)
        #expect(annStream.awaitEnd(), "the stream ends after `ended`")
        #expect(try client.request("POST", "/streams/\(annID)/token", headers: Tokens.bearer(ann)).status == 404)
        #expect(try client.request("DELETE", "/streams/\(annID)", headers: Tokens.bearer(admin)).status == 404)
        // Bob's stream goes on.
        #expect(try client.request("PUT", "/currency", json: #"{"default":"euro"}"#, headers: Tokens.bearer(bob)).status == 200)
        #expect(try bobStream.next(named: "currency").json["default"] as? String == "euro")
        #expect(try listed("").compactMap { $0["stream"] as? String } == [bobID])
        let metrics = try client.get("/metrics").text
        #expect(metrics.contains(#"herald_streams_closed_total{reason="ended by an administrator"} 1"#))
    }

    @Test func withoutAKeyNoStreamIsListed() throws {
        let server = try TestHerald()
        defer { server.stop() }
        #expect(try server.client().get("/streams").status == 404)
        #expect(try server.client().request("DELETE", "/streams/x").status == 404)
    }
}
