import Foundation

extension JSONValue {
    /// Parses JSON text. Throws `JSONParseError` with a human-readable reason on malformed input.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(Array(bytes))
        return try parser.parseDocument()
    }

    /// Compact JSON text.
    public var serialized: String { String(decoding: bytes, as: UTF8.self) }

    /// Compact JSON as UTF-8 bytes.
    ///
    /// Hand-written, kept: members come out in the order Herald wrote them (an event's `topic` first),
    /// which `JSONSerialization` does not keep, with no Foundation object per value; every response and
    /// event is written here, and the profile (`git show dad6eb7:BENCHMARKS.md`) has it encoded once per state.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    /// Appends compact JSON to `out`, as UTF-8 bytes: the fast path every response and event takes.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: Self.nullBytes)
        case .bool(let b): out.append(contentsOf: b ? Self.trueBytes : Self.falseBytes)
        case .int(let i): Self.writeInteger(i, to: &out)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)).utf8)
            } else {
                out.append(contentsOf: Self.nullBytes)
            }
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .encoded(let bytes): out.append(contentsOf: bytes)
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func writeInteger(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        var digits: [UInt8] = []
        digits.reserveCapacity(20)
        while magnitude > 0 {
            digits.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        out.append(contentsOf: digits.reversed())
    }

    /// A JSON string: quotes, backslashes and control characters escaped, and U+2028/U+2029 too
    /// (they end a line in JavaScript); everything else copied byte for byte.
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copy them whole.
        if out.appendUTF8(s, ifAll: { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0xE2 }) {
            out.append(UInt8(ascii: "\""))
            return
        }
        var utf8 = s.utf8.makeIterator()
        var pending: [UInt8] = []
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            case 0xE2:
                // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
                pending = [byte]
                if let second = utf8.next() {
                    pending.append(second)
                    if second == 0x80, let third = utf8.next() {
                        if third == 0xA8 || third == 0xA9 {
                            out.append(contentsOf: Array((third == 0xA8 ? "\\u2028" : "\\u2029").utf8))
                            continue
                        }
                        pending.append(third)
                    }
                }
                out.append(contentsOf: pending)
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
