import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// A batch of events wakes only the stream loops whose share holds an observer of it (issue 62): a
/// change watched by one stream is fanned out by one loop, not by every loop. And its twin test: two
/// servers alike but for `wakeOnlyLoopsWithObservers`, the same changes to small and large audiences,
/// and every stream's events compared.
@Suite struct LoopWakeTests {
    static func server(wakeOnlyLoopsWithObservers: Bool = true) throws -> TestHerald {
        try TestHerald { configuration in
            // Every stream comes from 127.0.0.1: no per-address limits.
            (configuration.http.streamsPerClient, configuration.http.connectionsPerSecond, configuration.http.connectionsPerAddress) = (nil, nil, nil)
            configuration.http.streamThreads = 3
            configuration.http.wakeOnlyLoopsWithObservers = wakeOnlyLoopsWithObservers
        }
    }

    @Test func aChangeWatchedByOneStreamIsFannedOutByOneLoop() throws {
        let server = try Self.server()
        defer { server.stop() }
        let stream = try server.stream("/currency/events")
        defer { stream.close() }
        _ = try stream.next()
        let before = server.herald.deliveringThreads
        for index in 0..<10 {
            #expect(try server.client().put("/currency", index % 2 == 0 ? #"{"default":"euro"}"# : #"{"default":"dollar"}"#).status == 200)
            _ = try stream.next(named: "currency")
        }
        let after = server.herald.deliveringThreads
        let fannedOut = after.keys.filter { after[$0, default: 0] > before[$0, default: 0] }
        #expect(fannedOut.count == 1, "one loop of three queued the changes: \(after), before \(before)")
    }

    /// The streams: a lobby, a record watched by three and one by two, one watched by 80 (more than
    /// an audience counted for its shares), the currency.
    static let paths = Array(repeating: "/units/events", count: 5) + Array(repeating: "/units/a/events", count: 3)
        + Array(repeating: "/units/b/events", count: 2) + Array(repeating: "/units/c/events", count: 80) + ["/currency/events"]

    func received(wakeOnlyLoopsWithObservers: Bool) throws -> [[SSEEvent]] {
        let server = try Self.server(wakeOnlyLoopsWithObservers: wakeOnlyLoopsWithObservers)
        defer { server.stop() }
        var fleets: [SSEFleet] = []
        defer { for fleet in fleets { fleet.close() } }
        for path in Set(Self.paths).sorted() {
            let fleet = try SSEFleet(port: server.port, path: path, count: Self.paths.count { $0 == path })
            #expect(fleet.pump(timeout: 30) { $0.events.allSatisfy { !$0.isEmpty } }, "\(path): every stream has its snapshot")
            fleets.append(fleet)
        }
        let client = server.client()
        let statuses = ["healthy", "wounded", "dead"]
        for round in 0..<5 {
            for id in ["a", "b", "c"] {
                #expect(try client.put("/units/\(id)", #"{"name":"\#(id)","status":"\#(statuses[(round + id.count) % 3])"}"#).status < 300)
            }
            #expect(try client.put("/currency", round % 2 == 0 ? #"{"default":"euro"}"# : #"{"default":"dollar"}"#).status == 200)
        }
        #expect(try client.request("DELETE", "/units/b").status == 204)
        // Snapshot, then: the lobby every unit change and the removal; a, c five changes; b five and its removal.
        let expected = ["/units/events": 17, "/units/a/events": 6, "/units/b/events": 7, "/units/c/events": 6, "/currency/events": 6]
        for (path, fleet) in zip(Set(Self.paths).sorted(), fleets) {
            #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.count == expected[path] } }, "\(path)")
        }
        return fleets.flatMap(\.events)
    }

    @Test func wakingSomeLoopsGivesEveryStreamWhatWakingAllGives() throws {
        let some = try received(wakeOnlyLoopsWithObservers: true), all = try received(wakeOnlyLoopsWithObservers: false)
        #expect(some.count == Self.paths.count)
        #expect(some == all, "the same events, in the same order, to every stream")
    }
}
