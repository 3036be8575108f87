extension Array where Element == UInt8 {
    /// Appends `text`'s UTF-8 bytes in one copy. `append(contentsOf: text.utf8)` copied them one at a
    /// time through the generic path (14 % of the writer's work for a `PUT /units`, in JSON and SSE
    /// encoding); a native string, or a substring of one, lends its contiguous bytes.
    @inlinable
    public mutating func appendUTF8(_ text: some StringProtocol) {
        if text.utf8.withContiguousStorageIfAvailable({ append(contentsOf: $0) }) == nil {
            append(contentsOf: text.utf8)
        }
    }

    /// Appends `text`'s UTF-8 bytes if every one passes `test`; says whether it did (nothing appended
    /// otherwise). One look at the contiguous bytes, then one copy.
    @inlinable
    public mutating func appendUTF8(_ text: String, ifAll test: (UInt8) -> Bool) -> Bool {
        if let done = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard bytes.allSatisfy(test) else { return false }
            append(contentsOf: bytes)
            return true
        }) {
            return done
        }
        guard text.utf8.allSatisfy(test) else { return false }
        append(contentsOf: text.utf8)
        return true
    }
}

extension String {
    /// Whether every UTF-8 byte of the string passes: over its contiguous bytes when it has them (a
    /// native string does; iterating `utf8` costs several times more per byte).
    @inlinable
    public func utf8AllSatisfy(_ test: (UInt8) -> Bool) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.allSatisfy(test) } ?? utf8.allSatisfy(test)
    }
}
