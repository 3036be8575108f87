extension Dictionary {
    /// Rebuilds the dictionary at its size when it holds under an eighth of its room (past 4,096
    /// entries of room), and returns the room it gave up: a Swift dictionary keeps the room a burst grew
    /// it to (100,000 watched topics once, 100,000 places for ever). Rebuilding costs one pass over what
    /// is left, and happens only after the dictionary lost most of what it held.
    public mutating func shrinkIfSparse() -> Int {
        let room = capacity
        guard room > 4_096, count < room / 8 else { return 0 }
        var smaller = Dictionary(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
        return room - capacity
    }
}
