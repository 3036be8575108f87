import HeraldDomain
import Testing

@Suite struct IdTests {
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
