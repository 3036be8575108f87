@testable import HeraldServer
import Testing

@Suite struct TopicTests {
    /// Every subject's form reads, and spells back as it was written; anything else is no topic.
    @Test func topicsReadByOneParserAndSpellBack() {
        let topics: [(String, Topic)] = [
            ("currency", .currency), ("units", .keyed("units")), ("auctions/7", .auction("7")), ("auctions/x", .auction("x")),
            ("trips/ice-1", .trip("ice-1")), ("units/scout_2", .record("units", id: "scout_2")), ("notifications/door.front", .notification("door.front")),
        ]
        for (text, topic) in topics {
            #expect(Topic(text) == topic, "\(text)")
            #expect(topic.description == text)
        }
        for text in ["", "currency/", "/currency", "units/", "auctions/", "auctions/1/bids", "trips/", "units/a b", "units/a.b",
                     "notifications/..", "notifications/.", "notifications/", "bids/1", String(repeating: "u", count: 3)] {
            #expect(Topic(text) == nil, "\(text.debugDescription) is no topic")
        }
    }
}
