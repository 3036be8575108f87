import HeraldCore
import Testing

@Suite struct DictionaryShrinkingTests {
    /// A dictionary that held 100,000 entries and holds 100 gives its room back, keeping every entry;
    /// one that is still more than an eighth full, or small, is left as it is.
    @Test func aDictionaryLeftMostlyEmptyGivesItsRoomBack() {
        var topics: [String: Int] = [:]
        for index in 0..<100_000 { topics["notifications/\(index)"] = index }
        for index in 100..<100_000 { topics["notifications/\(index)"] = nil }
        let room = topics.capacity
        #expect(room >= 100_000, "a dictionary keeps the room a burst grew it to")
        let given = topics.shrinkIfSparse()
        #expect(given > 0 && topics.capacity < 1_000, "room \(room) → \(topics.capacity)")
        var kept = 0
        for number in 0..<100 where topics["notifications/" + String(number)] == number { kept += 1 }
        #expect(topics.count == 100 && kept == 100, "\(topics.count) entries, \(kept) kept")

        var full: [Int: Int] = [:]
        for index in 0..<10_000 { full[index] = index }
        for index in 0..<8_000 { full[index] = nil }
        #expect(full.shrinkIfSparse() == 0, "a fifth full: left as it is")
        var small: [Int: Int] = [1: 1, 2: 2]
        small.reserveCapacity(1_000)
        #expect(small.shrinkIfSparse() == 0, "small: left as it is")
    }
}
