import Foundation
import HeraldDomain
import HeraldJSON

/// Reads and checks the fields of a JSON request body, collecting every problem before it throws.
struct FieldReader {
    private let members: [(String, JSONValue)]
    private(set) var errors: [FieldError] = []

    init(_ body: JSONValue) throws(DomainError) {
        guard case .object(let members) = body else {
            throw DomainError(.invalid, "the body must be a JSON object", fields: [FieldError(field: "", message: "expected an object, got \(body.typeName)")])
        }
        self.members = members
    }

    /// The member's value; an explicit `null` counts as present (and is then the wrong type).
    private func value(_ name: String) -> JSONValue? {
        members.first(where: { $0.0 == name })?.1
    }

    /// Refuses members that may not be sent here.
    mutating func forbid(_ names: [String], _ message: String) {
        for name in names where value(name) != nil { fail(name, message) }
    }

    mutating func fail(_ field: String, _ message: String) {
        errors.append(FieldError(field: field, message: message))
    }

    mutating func string(_ name: String, required: Bool = true, length: ClosedRange<Int>? = nil) -> String? {
        guard let value = value(name) else {
            if required { fail(name, "is required") }
            return nil
        }
        guard case .string(let string) = value else {
            fail(name, "must be a string, got \(value.typeName)")
            return nil
        }
        // No store can hold it as text (PostgreSQL refuses it), and no name needs it.
        if string.utf8.contains(0) {
            fail(name, "must not contain the NUL character (U+0000)")
            return nil
        }
        // Code points, as JSON Schema's maxLength counts them: a combining mark is a code point of its
        // own but joins the character before it in a count of characters (graphemes).
        if let length, !length.contains(string.unicodeScalars.count) {
            fail(name, "must be \(length.lowerBound) to \(length.upperBound) characters long")
            return nil
        }
        return string
    }

    mutating func integer(_ name: String, required: Bool = true, range: ClosedRange<Int64>? = nil) -> Int64? {
        guard let value = value(name) else {
            if required { fail(name, "is required") }
            return nil
        }
        guard case .int(let number) = value else {
            // 1e-400 or 2.0 is a number, not an integer; 1e30 is an integer too large for any range here.
            let tooLarge = if case .double(let d) = value, d.rounded() == d, abs(d) >= 0x1p63 { true } else { false }
            fail(name, tooLarge ? "is too large" : "must be an integer, got \(value.typeName)")
            return nil
        }
        if let range, !range.contains(number) {
            fail(name, "must be between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return number
    }

    mutating func date(_ name: String, required: Bool = true) -> Date? {
        guard let text = string(name, required: required) else { return nil }
        guard let date = Timestamp.parse(text) else {
            fail(name, "must be an RFC 3339 date-time, such as 2015-10-09T13:09:53Z")
            return nil
        }
        return date
    }

    mutating func object(_ name: String) -> JSONValue? {
        guard let value = value(name) else { return nil }
        guard case .object = value else {
            fail(name, "must be an object, got \(value.typeName)")
            return nil
        }
        return value
    }

    func finish() throws(DomainError) {
        guard errors.isEmpty else {
            throw DomainError(.invalid, errors.map { "\($0.field) \($0.message)" }.joined(separator: "; "), fields: errors)
        }
    }
}
