/// An auction's id: the number it was opened with (1, 2, 3, …, in order), written in paths, topics and
/// JSON as its decimal digits.
public struct AuctionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let number: Int

    public init(_ number: Int) { self.number = number }

    /// The id `text` names: 1 to 18 decimal digits, without a leading zero. Anything else names no
    /// auction (`01`, `1.0`, `-1`, `x`), so it is nil and the caller answers 404.
    public init?(_ text: some StringProtocol) {
        guard let number = DecimalNumber.parse(text) else { return nil }
        self.number = number
    }

    public var description: String { String(number) }

    public static func < (lhs: AuctionID, rhs: AuctionID) -> Bool { lhs.number < rhs.number }
}

/// A bid's number on its auction: 1 for the first, in the order they were accepted.
public struct BidNumber: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let value: Int

    public init(_ value: Int) { self.value = value }

    /// The number `text` names, as `AuctionID` reads its digits; nil when it names no bid.
    public init?(_ text: some StringProtocol) {
        guard let value = DecimalNumber.parse(text) else { return nil }
        self.value = value
    }

    public var description: String { String(value) }

    public static func < (lhs: BidNumber, rhs: BidNumber) -> Bool { lhs.value < rhs.value }
}

/// Numbers as ids spell them.
enum DecimalNumber {
    /// 1 to 18 ASCII digits, the first not 0: a positive Int; anything else nil.
    static func parse(_ text: some StringProtocol) -> Int? {
        let utf8 = text.utf8
        guard (1...18).contains(utf8.count), let first = utf8.first, first != UInt8(ascii: "0") else { return nil }
        var number = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return number
    }
}
