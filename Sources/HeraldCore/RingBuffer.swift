/// A growable FIFO queue on a circular array: O(1) append and removal at the front.
struct RingBuffer<Element> {
    private var storage: [Element?] = []
    private var head = 0
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        storage = Array(repeating: nil, count: Swift.max(minimumCapacity, 0))
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    mutating func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    /// The element `offset` places from the front.
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "ring buffer offset out of range")
        // Every slot inside `count` holds a value.
        return storage[(head + offset) % storage.count].unsafelyUnwrapped
    }

    var first: Element? { count > 0 ? self[0] : nil }

    mutating func removeAll() {
        storage = []
        head = 0
        count = 0
    }

    private mutating func grow() {
        let newCapacity = Swift.max(8, storage.count * 2)
        var newStorage = [Element?](repeating: nil, count: newCapacity)
        for offset in 0..<count { newStorage[offset] = storage[(head + offset) % storage.count] }
        storage = newStorage
        head = 0
    }
}
