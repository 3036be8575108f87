import Foundation
import HeraldCore
import HeraldDomain
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// What the compiler cannot check of a collection kind (`CollectionKind`), for every kind declared:
/// its topic reads back, a token with its member pattern opens its lobby, its members restore after a
/// restart with a replay equal to what a live observer saw, on SQLite and on PostgreSQL, and
/// `openapi.yaml` documents its lobby, filters and events. A kind added without one of these fails here.
@Suite struct CollectionRegistryTests {
    /// Makes a member of `kind` through the API: its id. A keyed kind is made with its own example body.
    func makeMember(of kind: CollectionKind, _ client: HTTPClient) throws -> String {
        let made = if let keyed = Registry.keyedKind(kind.topic) {
            try client.put("/\(kind.topic)/registry", keyed.example)
        } else if kind == .auctions {
            try client.post("/auctions", #"{"item":"Registry lamp","countdownSeconds":600}"#)
        } else {
            try client.post("/trips", #"{"departure":"2026-11-28T10:00:00Z","arrival":"2026-11-28T11:00:00Z"}"#)
        }
        guard made.status == 201, let id = made.json["id"] as? String else { throw TestError("\(kind) not made: \(made.text)") }
        return id
    }

    /// Every keyed kind's collection is declared, its stores are made, and its stored records read back
    /// as the kind wrote them.
    @Test func everyKeyedKindIsACollectionWithAStore() throws {
        let subjects = Subjects(clock: SystemClock(), sink: InlineSink())
        for kind in Registry.keyed {
            #expect(CollectionKind.allCases.contains { $0.topic == kind.collection }, "\(kind.collection) is a collection")
            #expect(subjects.keyed[kind.collection] != nil, "\(kind.collection) has a store")
            #expect(Registry.keyedKind(storedAs: kind.noun)?.collection == kind.collection, "\(kind.noun) is stored as its own")
        }
        #expect(Set(Registry.keyed.map { $0.collection }).count == Registry.keyed.count, "each collection once")
    }

    /// A keyed record may be observed before it is made: its snapshot names it with the kind's own
    /// name and null, and its first change comes as the kind's event.
    @Test(arguments: Registry.keyed.map { $0.collection })
    func aKeyedRecordIsObservedBeforeItIsMade(_ collection: String) throws {
        let kind = try #require(Registry.keyedKind(collection))
        let server = try TestHerald(examples: false)
        defer { server.stop() }
        let stream = try server.stream("/\(collection)/registry/events")
        defer { stream.close() }
        #expect(try stream.next().data == #"{"topic":"\#(collection)/registry","\#(kind.itemEvent.text)":null}"#)
        #expect(try server.client().put("/\(collection)/registry", kind.example).status == 201)
        #expect((try stream.next(named: kind.itemEvent.text).json[kind.itemEvent.text] as? [String: Any])?["id"] as? String == "registry")
    }

    @Test(arguments: CollectionKind.allCases)
    func theTopicReadsBack(_ kind: CollectionKind) throws {
        let topic = try #require(Topic(kind.topic))
        #expect(topic.isCollection && topic.description == kind.topic)
        #expect(CollectionKind(topic: topic) == kind && CollectionKind(topic: Topic(kind.topic + "/1")) == kind)
        #expect(EventRoutes.collectionFields[kind.topic] != nil, "its filters are the routes'")
    }

    @Test(arguments: CollectionKind.allCases)
    func aTokenWithTheMemberPatternOpensTheLobby(_ kind: CollectionKind) async throws {
        let server = try await TestHerald.secured(examples: false)
        defer { server.stop() }
        for grants in [[kind.memberPattern], [kind.topic], ["*"]] {
            let token = try await Tokens.make(subscribe: grants)
            let stream = try server.stream("/\(kind.topic)/events", headers: Tokens.bearer(token))
            #expect(try stream.next(named: "snapshot").json[kind.arrayName] != nil, "\(grants)")
            stream.close()
        }
        let other = try await Tokens.make(subscribe: ["currency"])
        #expect(try server.client().get("/\(kind.topic)/events", headers: Tokens.bearer(other)).status == 403)
    }

    @Test(arguments: CollectionKind.allCases)
    func membersRestoreAndReplayAfterARestartOnSQLite(_ kind: CollectionKind) throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        try restoresAndReplays(kind) { try TestHerald(dataDirectory: directory) }
    }

    @Test(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"),
          arguments: CollectionKind.allCases)
    func membersRestoreAndReplayAfterARestartOnPostgreSQL(_ kind: CollectionKind) throws {
        let url = try TestPostgres.database()
        try restoresAndReplays(kind) { try TestHerald { $0.postgresURL = url } }
    }

    /// A member made while a live observer watches the lobby; after a restart, the member reads the same,
    /// the lobby's snapshot holds it, and a replay from before it equals what the live observer saw.
    func restoresAndReplays(_ kind: CollectionKind, start: () throws -> TestHerald) throws {
        var live: [SSEEvent] = [], read = "", from = ""
        var id = ""
        do {
            let server = try start()
            defer { server.stop() }
            let lobby = try server.stream("/\(kind.topic)/events")
            defer { lobby.close() }
            from = try #require(try lobby.next().id)
            id = try makeMember(of: kind, server.client())
            live = [try lobby.next(named: kind.itemEvent.text)]
            read = try server.client().get("/\(kind.topic)/\(id)").text
        }
        let server = try start()
        defer { server.stop() }
        #expect(try server.client().get("/\(kind.topic)/\(id)").text == read, "the member reads the same after the restart")
        let snapshot = try server.stream("/\(kind.topic)/events")
        defer { snapshot.close() }
        let members = try #require(try snapshot.next().json[kind.arrayName] as? [[String: Any]])
        #expect(members.contains { $0["id"] as? String == id }, "the lobby's snapshot holds it")
        let replay = try server.stream("/\(kind.topic)/events", headers: [("Last-Event-ID", from)])
        defer { replay.close() }
        let replayed = try replay.next(named: kind.itemEvent.text)
        #expect(replayed.id == live[0].id && replayed.data == live[0].data, "the replay is what the live observer saw")
    }

    @Test(arguments: CollectionKind.allCases)
    func openapiDocumentsTheLobbyItsFiltersAndItsEvents(_ kind: CollectionKind) throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../openapi.yaml")
        let spec = try String(contentsOf: file, encoding: .utf8)
        let path = try #require(spec.range(of: "\n  /\(kind.topic)/events:\n"), "the lobby's path")
        let rest = spec[path.upperBound...]
        let section = rest[..<(rest.range(of: "\n  /")?.lowerBound ?? rest.endIndex)]
        for field in kind.filterFields.keys {
            #expect(section.contains("name: \(field)") || spec.contains("parameters/\(field.prefix(1).uppercased() + field.dropFirst())"),
                    "the filter \(field)")
        }
        #expect(section.contains("`\(kind.itemEvent.text)`"), "its event `\(kind.itemEvent.text)`")
        for field in kind.changedFields.fields {
            #expect(spec.contains("`\(field)`"), "the field \(field) of fields=")
        }
    }
}
