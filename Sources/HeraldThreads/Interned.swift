/// Values that many holders ask for alike (the paths and topics of streams), each kept once: a holder
/// gets the copy kept, whose storage every other holder of an equal value shares. An array, or a
/// string of more than 15 bytes, is a heap allocation of its own: 64 bytes a stream each, at 10,000
/// streams of one auction (heaptrack). Not a lock: keep it in one.
public struct Interned<Value: Hashable> {
    private var kept: [Value: Value] = [:]
    /// Values kept at most; past that they are let go together, and kept again as they are asked for.
    public let limit: Int

    public init(limit: Int = 1_024) {
        self.limit = limit
    }

    /// The copy of `value` kept, which it becomes if none is.
    public mutating func callAsFunction(_ value: Value) -> Value {
        if let copy = kept[value] { return copy }
        if kept.count >= limit { kept.removeAll() }
        kept[value] = value
        return value
    }

    /// Values kept now.
    public var count: Int { kept.count }
}
