import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// The twin test of packed replays (issue 62): streams that resume from the same id get their replay
/// packed (its frames made once, in pieces of about 32 KiB, the first sent by `sendfile` from a file in
/// memory) or, with `packedReplays` off, as its events one by one. Two servers alike but for the
/// switch, the same 200 changes, 40 streams resuming on each, and every stream's events compared.
@Suite struct PackedReplayTwinTests {
    static let changes = 200, streams = 40, resumedAfter = 10

    func resumed(packed: Bool) throws -> [[SSEEvent]] {
        let server = try TestHerald { configuration in
            (configuration.http.streamsPerClient, configuration.http.connectionsPerSecond, configuration.http.connectionsPerAddress) = (nil, nil, nil)
            configuration.packedReplays = packed
        }
        defer { server.stop() }
        let client = server.client()
        // Units of some 170 bytes each and the currency: a replay of about 40 KiB, two pieces.
        let name = String(repeating: "n", count: 96)
        for index in 0..<Self.changes {
            if index % 4 == 3 {
                #expect(try client.put("/currency", index % 8 == 3 ? #"{"default":"euro"}"# : #"{"default":"dollar"}"#).status == 200)
            } else {
                #expect(try client.put("/units/a", #"{"name":"\#(name)\#(index)","status":"healthy"}"#).status < 300)
            }
        }
        let fleet = try SSEFleet(port: server.port, path: "/events?topic=units/a&topic=currency&lastEventId=\(Self.resumedAfter)",
                                 count: Self.streams)
        defer { fleet.close() }
        let last = String(Self.changes)
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.last?.id == last } }, "every stream caught up")
        return fleet.events
    }

    @Test func aPackedReplayGivesEveryStreamWhatItsEventsOneByOneGive() throws {
        let packed = try resumed(packed: true), plain = try resumed(packed: false)
        #expect(packed.count == Self.streams)
        #expect(packed.allSatisfy { $0.compactMap(\.id) == (Self.resumedAfter + 1...Self.changes).map(String.init) },
                "each stream got every event after the id it resumed from, once and in order")
        #expect(packed == plain, "the same events, in the same order, to every stream")
    }
}
