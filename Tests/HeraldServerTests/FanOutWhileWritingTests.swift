import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// The twin test of the stream engine's `fanOutWhileWriting`: a loop that takes events published while
/// it writes into the same pass must give every stream what a loop that leaves them for the next pass
/// gives, event for event. Two servers alike but for the switch, the same changes one after another
/// while one loop writes 400 streams (so that many are published while a pass is under way), and each
/// stream's events, de-chunked and parsed, compared.
@Suite struct FanOutWhileWritingTests {
    static let streams = 400, changes = 60

    func received(fanOutWhileWriting: Bool) throws -> [[SSEEvent]] {
        let server = try TestHerald(examples: true) { configuration in
            // Every stream comes from 127.0.0.1: no per-address limits.
            (configuration.http.streamsPerClient, configuration.http.connectionsPerSecond, configuration.http.connectionsPerAddress) = (nil, nil, nil)
            configuration.http.streamThreads = 1
            configuration.http.fanOutWhileWriting = fanOutWhileWriting
        }
        defer { server.stop() }
        let fleet = try SSEFleet(port: server.port, path: "/events?topic=currency", count: Self.streams)
        defer { fleet.close() }
        #expect(fleet.pump(timeout: 30) { $0.events.allSatisfy { !$0.isEmpty } }, "every stream has its snapshot")
        let client = server.client()
        for index in 0..<Self.changes {
            #expect(try client.put("/currency", index % 2 == 0 ? #"{"default":"euro"}"# : #"{"default":"dollar"}"#).status == 200)
        }
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.count == 1 + Self.changes } })
        return fleet.events
    }

    @Test func eventsTakenWhileALoopWritesReachEveryStreamAsTheNextPassWouldBringThem() throws {
        let taken = try received(fanOutWhileWriting: true), left = try received(fanOutWhileWriting: false)
        #expect(taken.count == Self.streams && left.count == Self.streams)
        #expect(taken.allSatisfy { $0.count == 1 + Self.changes })
        #expect(taken == left, "the same events, in the same order, to every stream")
        #expect(Set(taken.map { $0.compactMap(\.id) }).count == 1, "every stream got the same ids")
    }
}
