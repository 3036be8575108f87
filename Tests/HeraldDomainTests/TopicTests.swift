import HeraldDomain
import Testing

@Suite struct TopicTests {
    /// Every subject's form reads, and spells back as it was written; anything else is no topic.
    @Test func topicsReadByOneParserAndSpellBack() {
        let topics: [(String, Topic)] = [
            ("currency", .currency), ("units", .units), ("auctions/7", .auction("7")), ("auctions/x", .auction("x")),
            ("trips/ice-1", .trip("ice-1")), ("units/scout_2", .unit("scout_2")), ("notifications/door.front", .notification("door.front")),
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

    /// An auction id or bid number is 1 to 18 digits without a leading zero; anything else names none.
    @Test func idsAreCanonicalNumbers() {
        #expect(AuctionID("7")?.number == 7 && AuctionID("123456789012345678")?.number == 123_456_789_012_345_678)
        for text in ["", "0", "07", "-1", "+1", "1.0", "x", "1x", " 1", "1234567890123456789", "٣"] {
            #expect(AuctionID(text) == nil, "\(text.debugDescription)")
            #expect(BidNumber(text) == nil, "\(text.debugDescription)")
        }
        #expect(AuctionID(2) < AuctionID(10) && AuctionID(10).description == "10" && BidNumber(3).description == "3")
    }
}
