import HTTPTypes
/// A request target as the client sent it (RFC 9112 §3.2), parsed by Herald rather than libmicrohttpd:
/// an encoded slash stays inside its segment, a NUL is refused, and query arguments cost no
/// libmicrohttpd memory however many there are.
public struct RequestTarget: Sendable, Equatable {
    /// The path's segments, each percent-decoded (`/units/a%2Fb` is `["units", "a/b"]`).
    public let segments: [String]
    /// The path as sent, without the query.
    public let path: String
    /// Query arguments in order, decoded (`+` is a space).
    public let query: [Argument]
    /// The authority of an absolute-form target (`GET http://host:port/path`), which replaces `Host`.
    public let authority: String?

    public struct Argument: Sendable, Equatable {
        public let name: String
        public let value: String
    }

    /// Longest target Herald reads; a longer one is 414.
    public static let maxLength = 8192

    /// Parses `raw`; a target Herald cannot read is a 400 (or 414 when it is too long).
    public init(_ raw: String) throws(Problem) {
        if let plain = Self.plainPath(raw) {
            self = plain
        } else {
            try self.init(parsing: raw)
        }
    }

    /// Any target, the general way (`plainPath` takes the common ones faster; the tests compare the two).
    init(parsing raw: String) throws(Problem) {
        let bytes = Array(raw.utf8)
        guard bytes.count <= Self.maxLength else {
            throw Problem(status: .uriTooLong, detail: "the request target is longer than \(Self.maxLength) bytes")
        }
        for byte in bytes where byte <= 0x20 || byte == 0x7F || byte == 0x23 {
            throw Problem(status: .badRequest, detail: "the request target has a space, a control character or a fragment")
        }
        var rest = bytes[...]
        var authority: String?
        if raw == "*" {
            rest = []
        } else if bytes.first != 0x2F {
            // absolute-form: scheme "://" authority path
            guard let schemeEnd = Self.find([0x3A, 0x2F, 0x2F], in: bytes),
                  ["http", "https"].contains(String(decoding: bytes[0..<schemeEnd], as: UTF8.self).lowercased()) else {
                throw Problem(status: .badRequest, detail: "the request target must be a path such as /health")
            }
            let afterScheme = bytes[(schemeEnd + 3)...]
            let authorityEnd = afterScheme.firstIndex { $0 == 0x2F || $0 == 0x3F } ?? afterScheme.endIndex
            let host = String(decoding: afterScheme[..<authorityEnd], as: UTF8.self)
            guard !host.isEmpty, !host.contains("@") else {
                throw Problem(status: .badRequest, detail: "the request target's authority must be a host and port")
            }
            authority = host
            rest = afterScheme[authorityEnd...]
        }
        let queryStart = rest.firstIndex(of: 0x3F)
        let pathBytes = rest[..<(queryStart ?? rest.endIndex)]
        var segments: [String] = []
        for part in pathBytes.split(separator: 0x2F, omittingEmptySubsequences: true) {
            let decoded = try Self.decode(part, plusIsSpace: false, allowNUL: false)
            segments.append(decoded)
        }
        var query: [Argument] = []
        if let queryStart {
            for pair in rest[(queryStart + 1)...].split(separator: 0x26, omittingEmptySubsequences: true) {
                let equals = pair.firstIndex(of: 0x3D)
                // A query value is any string: each parameter's own check says what it accepts.
                let name = try Self.decode(pair[..<(equals ?? pair.endIndex)], plusIsSpace: true, allowNUL: true)
                var value = ""
                if let equals { value = try Self.decode(pair[(equals + 1)...], plusIsSpace: true, allowNUL: true) }
                query.append(Argument(name: name, value: value))
            }
        }
        self.segments = segments
        self.path = pathBytes.isEmpty ? "/" : String(decoding: pathBytes, as: UTF8.self)
        self.query = query
        self.authority = authority
    }

    private init(segments: [String], path: String, query: [Argument], authority: String?) {
        (self.segments, self.path, self.query, self.authority) = (segments, path, query, authority)
    }

    /// The common target, read without copying its bytes: an origin-form path of visible ASCII with
    /// nothing to decode and no query (no `%`, `?` or `#`). What the general reading below would make
    /// of it; anything else goes that way.
    private static func plainPath(_ raw: String) -> RequestTarget? {
        var raw = raw
        let read = raw.withUTF8 { bytes -> [String]? in
            guard bytes.first == 0x2F, bytes.count <= maxLength else { return nil }
            var segments: [String] = []
            segments.reserveCapacity(4)
            var start = 1
            for index in 1...bytes.count {
                if index == bytes.count || bytes[index] == 0x2F {
                    if index > start { segments.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
                    start = index + 1
                    continue
                }
                let byte = bytes[index]
                if byte <= 0x20 || byte >= 0x7F || byte == 0x23 || byte == 0x25 || byte == 0x3F { return nil }
            }
            return segments
        }
        // The path is the target as sent: the string itself, not a copy of its bytes.
        return read.map { RequestTarget(segments: $0, path: raw, query: [], authority: nil) }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// Percent-decodes one segment or argument: well-formed escapes only, valid UTF-8, and no NUL in a
    /// path segment (which C code would read as the end of the path).
    static func decode(_ part: ArraySlice<UInt8>, plusIsSpace: Bool, allowNUL: Bool) throws(Problem) -> String {
        // Most segments have nothing to decode: one string, no buffer.
        if !part.contains(where: { $0 == 0x25 || (plusIsSpace && $0 == 0x2B) || $0 >= 0x80 }) {
            return String(decoding: part, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(part.count)
        var index = part.startIndex
        while index < part.endIndex {
            let byte = part[index]
            if byte == 0x25 {
                guard index + 2 < part.endIndex, let high = hex(part[index + 1]), let low = hex(part[index + 2]) else {
                    throw Problem(status: .badRequest, detail: "the request target has a malformed percent-escape")
                }
                let decoded = high << 4 | low
                guard decoded != 0 || allowNUL else { throw Problem(status: .badRequest, detail: "the request path has an encoded NUL (%00)") }
                out.append(decoded)
                index += 3
            } else {
                out.append(plusIsSpace && byte == 0x2B ? 0x20 : byte)
                index += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw Problem(status: .badRequest, detail: "the request target is not UTF-8 once decoded")
        }
        return text
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
