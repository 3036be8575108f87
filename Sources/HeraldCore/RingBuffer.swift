/// A growable FIFO queue on a circular array: O(1) append and removal at the front.
struct RingBuffer<Element> {
    private var storage: [Element?] = []
    private var head = 0
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        storage = Array(repeating: nil, count: Swift.max(minimumCapacity, 0))
    }

    var isEmpty: Bool { count == 0 }

    /// The slot of the element `offset` places from the front (`offset` < the capacity): a subtraction,
    /// not a division, on every append and removal.
    private func slot(_ offset: Int) -> Int {
        let slot = head + offset
        return slot >= storage.count ? slot - storage.count : slot
    }

    mutating func append(_ element: Element) {
        if count == storage.count { grow(to: Swift.max(8, storage.count * 2)) }
        storage[slot(count)] = element
        count += 1
    }

    /// Room for `capacity` elements in all, so that appending up to it moves nothing (a replay's
    /// events queued at once).
    mutating func reserveCapacity(_ capacity: Int) {
        if capacity > storage.count { grow(to: capacity) }
    }

    mutating func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        // Moved out of its slot, not copied and then cleared.
        let element = storage[head].take()
        head = slot(1)
        count -= 1
        return element
    }

    /// The element `offset` places from the front.
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "ring buffer offset out of range")
        // Every slot inside `count` holds a value.
        return storage[slot(offset)].unsafelyUnwrapped
    }

    var first: Element? { count > 0 ? self[0] : nil }

    mutating func removeAll() {
        storage = []
        head = 0
        count = 0
    }

    /// Moves the elements, in order, to the front of new storage of `capacity` slots.
    private mutating func grow(to capacity: Int) {
        var newStorage = [Element?](repeating: nil, count: capacity)
        for offset in 0..<count { newStorage[offset] = storage[slot(offset)].take() }
        storage = newStorage
        head = 0
    }
}
