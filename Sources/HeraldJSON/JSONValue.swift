import Foundation

/// A JSON value. Objects Herald builds keep their members in the order written (so an event has
/// `topic` first); objects parsed from a body have theirs sorted by name.
///
/// Herald builds every response and event from these, so output is compact and stable.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// A value written already, as compact JSON text, which `write(to:)` copies as it is: one value
    /// rendered once and put in several documents (an auction in a bid's event, its snapshot and its
    /// answer). Only Herald makes one, from `bytes`; the parser never does. It equals any value that
    /// writes the same text.
    case encoded([UInt8])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case let (.encoded(a), .encoded(b)): a == b
        case let (.encoded(a), other), let (other, .encoded(a)): a == other.bytes
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The member named `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    /// The JSON type's name, for validation messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        case .encoded(let bytes): (try? JSONValue.parse(bytes))?.typeName ?? "JSON text"
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
}

extension JSONValue {
    /// A string, or null when `value` is nil.
    public static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    /// An integer, or null when `value` is nil.
    public static func optional(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }
    /// An integer from `Int`.
    public static func integer(_ value: Int) -> JSONValue { .int(Int64(value)) }
}
