import Foundation
import HeraldHTTP
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// The replicas' channels against a role that may only log in to the database (`LISTEN` and `NOTIFY`
/// need no privilege): it learns no token, and nothing it sends is acted on.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
struct PostgresChannelTests {
    /// Two replicas with a token key; a role with no right on Herald's tables listens on both channels
    /// while a stream is renewed through the replica that does not hold it, then sends forged news (an
    /// event that was never stored, with and without a made-up seal), forged presence, and a captured
    /// message again. No token crosses the database; no forged or replayed payload changes what any
    /// replica answers or streams; each is counted in `herald_replica_messages_dropped_total`.
    @Test func aRoleThatMayOnlyLogInCanNeitherReadTokensNorForgeWhatReplicasTakeIn() async throws {
        let url = try TestPostgres.database()
        let role = "spy_" + UUID().uuidString.prefix(8).lowercased()
        try TestPostgres.run("CREATE ROLE \(role) LOGIN")
        let spyURL = url.replacingOccurrences(of: "postgres://postgres@", with: "postgres://\(role)@")
        let clock = ManualClock(now: Date())
        let (holder, other) = try await PostgresReplicaTests.securedPair(url, clock: clock)
        defer { holder.stop(); other.stop() }

        let spy = try TestPostgres.Session(on: spyURL)
        #expect(throws: (any Error).self, "the spy cannot read the channel key") { try spy.run("SELECT key FROM herald_channel_key") }
        #expect(throws: (any Error).self, "nor Herald's tables") { try spy.run("SELECT count(*) FROM herald_records") }
        try spy.run("LISTEN herald")
        try spy.run("LISTEN herald_messages")

        let (writer, first, stream, id) = try await PostgresReplicaTests.unitStream(holder: holder, other: other, clock: clock)
        let fresh = try await Tokens.make(expires: Date().addingTimeInterval(3600))
        let renewed = try other.client().request("POST", "/streams/\(id)/token", headers: Tokens.bearer(fresh))
        #expect(renewed.status == 204, "\(renewed.text)")

        let heard = spy.notifications(waiting: 1)
        let news = heard.filter { $0.channel == "herald" }.map(\.payload)
        let messages = heard.filter { $0.channel == "herald_messages" }.map(\.payload)
        #expect(!news.isEmpty && !messages.isEmpty, "the spy heard both channels: \(heard.count)")
        for token in [writer, first, fresh] {
            #expect(!heard.contains { $0.payload.contains(token) }, "no token crosses the database")
        }
        let renewal = try #require(messages.first { $0.contains("\"renew\"") }, "the forwarded renewal: \(messages)")

        // Forged news: the next revision, with an event that was never stored and a unit state the
        // database does not hold, once without a seal and once with a made-up one.
        let revision = try #require(try TestPostgres.run("SELECT revision FROM herald_sequence", on: url).flatMap { Int64($0) })
        let sequence = try #require(try TestPostgres.run("SELECT value FROM herald_sequence", on: url).flatMap { UInt64($0) })
        var forged = CommitNews.Writer()
        let document = Array(#"{"id":"u1","name":"U","status":"forged"}"#.utf8)
        forged.add(event: StoredEvent(id: sequence + 1, topic: "units/u1", name: "unit",
                                      data: Array(#"{"topic":"units/u1","unit":{"id":"u1","name":"U","status":"forged"}}"#.utf8),
                                      tags: [], at: Date()),
                   records: [RecordChange(kind: "unit", id: "u1", document: document)], auction: nil, bid: nil)
        let payload = try #require(forged.payloads(revision: revision + 1).first)
        try spy.run("SELECT pg_notify('herald', '\(payload.replacingOccurrences(of: "'", with: "''"))')")
        let madeUp = String(repeating: "A", count: 43) + ":" + payload
        try spy.run("SELECT pg_notify('herald', '\(madeUp.replacingOccurrences(of: "'", with: "''"))')")
        // Forged presence: a user with many watchers, and a goodbye that would drop a replica's users.
        try spy.run(#"SELECT pg_notify('herald_messages', '{"bye":"x"}')"#)
        // A captured message, sent again as it was.
        try spy.run("SELECT pg_notify('herald_messages', '\(renewal.replacingOccurrences(of: "'", with: "''"))')")

        let stores = try [holder, other].map { try #require($0.herald.journal.store as? PostgresStore) }
        #expect(eventually { stores.allSatisfy { ($0.seal.drops[.forged] ?? 0) >= 3 && ($0.seal.drops[.replayed] ?? 0) >= 1 } },
                "each replica dropped the forgeries and the replay: \(stores.map(\.seal.drops))")
        for server in [holder, other] {
            let unit = try server.client().get("/units/u1").json
            #expect(unit["status"] as? String == "healthy", "nothing forged was taken in: \(unit)")
        }
        // A real change after them is seen; the forged event never was.
        #expect(try other.client().request("PUT", "/units/u1", json: #"{"name":"U","status":"dead"}"#, headers: Tokens.bearer(writer)).status == 200)
        let seen = try stream.next(named: "unit")
        #expect((seen.json["unit"] as? [String: Any])?["status"] as? String == "dead", "\(seen.data)")
        #expect(seen.id.flatMap { UInt64($0) } == sequence + 1, "the real change took the id the forgery claimed: \(seen)")
        for server in [holder, other] {
            #expect(eventually { (try? server.client().get("/units/u1").json["status"] as? String) == "dead" })
            let metrics = try server.client().get("/metrics").text
            #expect(metrics.contains(#"herald_replica_messages_dropped_total{reason="forged"}"#), "counted in /metrics")
        }
    }
}
