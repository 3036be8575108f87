import HeraldThreads
import Testing

@Suite struct InternedTests {
    /// Where an array's elements are: one storage for two arrays is one allocation.
    private func storage(_ array: [String]) -> UnsafeRawPointer? { array.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }

    @Test func equalValuesMadeApartComeBackAsTheOneKept() {
        var interned = Interned<[String]>()
        let first = interned(["auctions/" + String(1)])
        let second = interned(["auctions/" + String(1)])
        #expect(second == first)
        #expect(storage(second) == storage(first))
        let other = interned(["auctions/2"])
        #expect(storage(other) != storage(first))
        #expect(interned.count == 2)
    }

    @Test func pastTheLimitEveryValueIsLetGoTogether() {
        var interned = Interned<[String]>(limit: 2)
        let kept = interned([String(repeating: "a", count: 1)])
        _ = interned(["b"])
        _ = interned(["c"])  // the third: the two kept are let go, and it is kept
        #expect(interned.count == 1)
        #expect(storage(interned([String(repeating: "a", count: 1)])) != storage(kept))  // kept anew
        #expect(interned.count == 2)
    }
}
