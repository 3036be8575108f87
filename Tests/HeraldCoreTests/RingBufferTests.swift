@testable import HeraldCore
import Testing

/// The queue under every observer and the hub's history: first in, first out, across the wrap of its
/// circular storage and across growth.
@Suite struct RingBufferTests {
    final class Box {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    /// Taken out in the order put in, while the front wraps round the storage many times, and while
    /// the storage grows with its front in the middle (from every count from 1 to 40 in the queue).
    @Test func keepsItsOrderAcrossTheWrapAndGrowth() {
        for held in 1...40 {
            var ring = RingBuffer<Int>()
            var next = 0, expected = 0
            for _ in 0..<held { ring.append(next); next += 1 }
            for _ in 0..<100 {
                ring.append(next); next += 1
                #expect(ring.removeFirst() == expected, "holding \(held)")
                expected += 1
            }
            #expect(ring.count == held)
            #expect((0..<held).map { ring[$0] } == Array(expected..<next), "indexed from the front, holding \(held)")
            #expect(ring.first == expected)
            // Grows (more than once) with its front wherever the cycling left it.
            for _ in 0..<50 { ring.append(next); next += 1 }
            var taken: [Int] = []
            while let value = ring.removeFirst() { taken.append(value) }
            #expect(taken == Array(expected..<next), "after growing, holding \(held)")
        }
    }

    /// Reserving room with the front in the middle of the storage keeps the order, and appending up
    /// to the room reserved keeps it too.
    @Test func reservingRoomKeepsTheOrder() {
        var ring = RingBuffer<Int>()
        for value in 0..<8 { ring.append(value) }
        for _ in 0..<5 { _ = ring.removeFirst() }
        for value in 8..<12 { ring.append(value) }  // wrapped: 5, 6, 7 at the end, 8 to 11 at the start
        ring.reserveCapacity(100)
        for value in 12..<100 { ring.append(value) }
        var taken: [Int] = []
        while let value = ring.removeFirst() { taken.append(value) }
        #expect(taken == Array(5..<100))
        #expect(ring.isEmpty && ring.removeFirst() == nil)
    }

    /// What is taken out is no longer held: the queue keeps no reference to an event it handed on.
    @Test func whatIsTakenOutIsNoLongerHeld() {
        var ring = RingBuffer<Box>()
        weak var gone: Box?
        do {
            let box = Box(1)
            gone = box
            ring.append(box)
            ring.append(Box(2))
        }
        #expect(gone != nil)
        #expect(ring.removeFirst()?.value == 1)
        #expect(gone == nil, "released once taken")
        ring.removeAll()
        #expect(ring.isEmpty && ring.first == nil)
    }
}
