/// An auction's id: the number it was opened with (1, 2, 3, …, in order), written in paths, topics and
/// JSON as its decimal digits.
public struct AuctionID: NumberedID {
    public let number: Int
    public init(_ number: Int) { self.number = number }
}

/// A trip's id: the number it was added with (1, 2, 3, …, in order), written as its decimal digits.
public struct TripID: NumberedID {
    public let number: Int
    public init(_ number: Int) { self.number = number }
}

/// A bid's number on its auction: 1 for the first, in the order they were accepted.
public struct BidNumber: NumberedID {
    public let number: Int
    public init(_ number: Int) { self.number = number }
}

/// A positive number that names something, written as its decimal digits.
public protocol NumberedID: Hashable, Comparable, Sendable, CustomStringConvertible {
    var number: Int { get }
    init(_ number: Int)
}

extension NumberedID {
    /// The one `text` names: 1 to 18 decimal digits, without a leading zero. Anything else names none
    /// (`01`, `1.0`, `-1`, `x`), so it is nil and the caller answers 404. (Inlinable: unspecialized,
    /// the generic reading cost more than the rest of a topic's check.)
    @inlinable public init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        guard (1...18).contains(utf8.count), let first = utf8.first, first != UInt8(ascii: "0") else { return nil }
        var number = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        self.init(number)
    }

    public var description: String { String(number) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.number < rhs.number }
}
