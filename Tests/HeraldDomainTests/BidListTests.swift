import Foundation
@testable import HeraldDomain
import HeraldTestSupport
import Testing

@Suite struct BidListTests {
    func bid(_ number: Int) -> Bid { Bid(number: number, bidder: "b\(number)", amount: Int64(number), at: Date(timeIntervalSince1970: 0)) }

    /// Values of one auction share their bids: each shows its own first `count`, a copy that appends
    /// does not change the value it was copied from, and one that appends behind another's back gets
    /// storage of its own.
    @Test func copiesShowTheirOwnBids() {
        var original = BidList([bid(1), bid(2)])
        var copy = original
        copy.append(bid(3))
        #expect(original.map(\.amount) == [1, 2])
        #expect(copy.map(\.amount) == [1, 2, 3])
        original.append(bid(30))
        #expect(original.map(\.amount) == [1, 2, 30], "appending behind the copy's back")
        #expect(copy.map(\.amount) == [1, 2, 3], "the copy is untouched")
        copy.append(bid(4))
        #expect(copy.map(\.amount) == [1, 2, 3, 4])
        #expect(original.last?.amount == 30 && BidList().last == nil)
        #expect(Array(copy[2...]).map(\.amount) == [3, 4])
    }
}
