/// A strict RFC 8259 parser: no trailing commas, no comments, no duplicate member names (JavaScript
/// and Python would keep the last, Foundation the first: refusing is the only reading all agree on),
/// numbers by the grammar, valid UTF-8, and a nesting limit so no body can exhaust the stack.
/// Hand-written rather than Foundation's `JSONDecoder`, which accepts trailing commas and drops
/// duplicate names without a word.
struct JSONParser {
    static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipSpace()
        let value = try parseValue(depth: 0)
        skipSpace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ reason: String) -> JSONParseError {
        JSONParseError(reason: "the body is not valid JSON: \(reason) at byte \(index)")
    }

    private mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth)") }
        guard index < bytes.count else { throw fail("unexpected end") }
        switch bytes[index] {
        case 0x7B: return try parseObject(depth: depth)
        case 0x5B: return try parseArray(depth: depth)
        case 0x22: return .string(try parseString())
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        case 0x2D, 0x30...0x39: return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unexpected character")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var members: [(String, JSONValue)] = []
        var names = Set<String>()
        skipSpace()
        if index < bytes.count, bytes[index] == 0x7D {
            index += 1
            return .object([])
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x22 else { throw fail("expected a member name in quotes") }
            let name = try parseString()
            guard names.insert(name).inserted else { throw fail("the member name \"\(name.prefix(100))\" appears twice") }
            skipSpace()
            guard index < bytes.count, bytes[index] == 0x3A else { throw fail("expected ':'") }
            index += 1
            skipSpace()
            members.append((name, try parseValue(depth: depth + 1)))
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            if bytes[index] == 0x2C { index += 1; continue }
            guard bytes[index] == 0x7D else { throw fail("expected ',' or '}'") }
            index += 1
            // Sorted by name: stored documents and their output do not depend on the client's order.
            return .object(members.sorted { $0.0 < $1.0 })
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == 0x5D {
            index += 1
            return .array([])
        }
        while true {
            skipSpace()
            items.append(try parseValue(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            if bytes[index] == 0x2C { index += 1; continue }
            guard bytes[index] == 0x5D else { throw fail("expected ',' or ']'") }
            index += 1
            return .array(items)
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        // The bytes between escapes are taken a run at a time; a string without an escape, as nearly
        // all are, is made from its bytes where they lie.
        var out: [UInt8] = [], escaped = false
        var run = index
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x22:
                if escaped { out.append(contentsOf: bytes[run..<index]) }
                guard let text = Self.string(escaped ? out[...] : bytes[run..<index]) else { throw fail("a string is not UTF-8") }
                index += 1
                return text
            case 0x5C:
                out.append(contentsOf: bytes[run..<index])
                escaped = true
                index += 1
                guard index < bytes.count else { throw fail("unexpected end") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case 0x22, 0x5C, 0x2F: out.append(escape)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == 0x5C, bytes[index + 1] == 0x75 else {
                            throw fail("a lone surrogate in \\u escape")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("a lone surrogate in \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("an invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw fail("an invalid escape")
                }
                run = index
            case 0x00..<0x20:
                throw fail("a control character inside a string")
            default:
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// The text of `bytes`; nil when they are not UTF-8. Decoding repairs such bytes, so the text
    /// differs from them (where the generic `String(validating:)` costs a metadata lookup a call).
    private static func string(_ bytes: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw fail("an invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        if bytes[index] == 0x2D { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a number needs digits") }
        if bytes[index] == 0x30 {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("a number with a leading zero") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        var integral = true
        if index < bytes.count, bytes[index] == 0x2E {
            integral = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a fraction needs digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == 0x65 || bytes[index] == 0x45 {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("an exponent needs digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let integer = Int64(text) { return .int(integer) }
        if !integral, let integer = Self.exactInteger(bytes[start..<index]) { return .int(integer) }
        guard let double = Double(text), double.isFinite else { throw fail("a number out of range") }
        return .double(double)
    }

    /// The integer a number with a fraction or an exponent stands for exactly (`96.0`, `1e2`, `1.5e1`),
    /// as JSON Schema counts it; nil when its exact value is not a whole number (`1e-400`, `0.5`) or does
    /// not fit 64 bits. Worked out on the digits, never through a rounded double.
    static func exactInteger(_ number: ArraySlice<UInt8>) -> Int64? {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0
        var index = number.startIndex
        if number[index] == 0x2D { negative = true; index += 1 }
        var inFraction = false
        while index < number.endIndex, number[index] != 0x65, number[index] != 0x45 {
            if number[index] == 0x2E { inFraction = true } else {
                digits.append(number[index] - 0x30)
                if inFraction { exponent -= 1 }
            }
            index += 1
        }
        if index < number.endIndex {
            index += 1
            var sign = 1
            if number[index] == 0x2B || number[index] == 0x2D { sign = number[index] == 0x2D ? -1 : 1; index += 1 }
            var value = 0
            while index < number.endIndex {
                value = min(value * 10 + Int(number[index] - 0x30), 1_000_000)  // far past any 64-bit integer
                index += 1
            }
            exponent += sign * value
        }
        guard let firstNonZero = digits.firstIndex(where: { $0 != 0 }) else { return 0 }
        digits.removeSubrange(..<firstNonZero)
        while exponent < 0, digits.last == 0 { digits.removeLast(); exponent += 1 }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in digits + Array(repeating: 0, count: exponent) {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
        }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}
