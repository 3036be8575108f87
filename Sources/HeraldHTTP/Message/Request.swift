public import HTTPTypes

/// An HTTP request as a handler sees it: the whole body has been read.
public struct Request: Sendable {
    public let method: HTTPRequest.Method
    /// The path as sent, without the query (percent-escapes kept).
    public let path: String
    /// The path's segments, percent-decoded: an encoded slash stays inside its segment.
    public let segments: [String]
    /// Query arguments in order; a name may repeat (`topic=a&topic=b`).
    public let query: [(name: String, value: String)]
    /// Header fields, in order; names compare without case.
    public let headers: HTTPFields
    public let body: [UInt8]
    /// Names this request in the log and in the problem documents it gets.
    public let id: String
    /// The client's address: the peer's, or behind a trusted proxy the one it forwarded for.
    public let client: String
    /// Path parameters filled in by the router (`{id}`).
    public var parameters: [String: String] = [:]

    public init(method: HTTPRequest.Method, path: String, segments: [String]? = nil, query: [(name: String, value: String)] = [],
                headers: HTTPFields = [:], body: [UInt8] = [], id: String = "-", client: String = "-") {
        self.method = method
        self.path = path
        self.segments = segments ?? path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        self.query = query
        self.headers = headers
        self.body = body
        self.id = id
        self.client = client
    }

    /// The value of header `name`; several fields of that name are joined with commas (RFC 9110 §5.3),
    /// so a repeated `Authorization` or `Idempotency-Key` reads as no valid one.
    public func header(_ name: HTTPField.Name) -> String? { headers[name] }

    /// The first value of query argument `name`.
    public func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Every value of query argument `name`.
    public func queryValues(_ name: String) -> [String] { query.filter { $0.name == name }.map(\.value) }

    /// The path parameter `name`; the router guarantees the ones in its pattern.
    public func parameter(_ name: String) -> String { parameters[name] ?? "" }
}

extension StringProtocol {
    /// Whether the text is one or more ASCII digits and nothing else (no sign, no space): a number as
    /// HTTP and Herald's ids and cursors write one.
    public var isASCIIDigits: Bool {
        !isEmpty && utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// The text without spaces and tabs at either end (HTTP's optional whitespace). Foundation's
    /// `trimmingCharacters(in:)` goes through NSString and was 4 % of a PUT's CPU.
    public var trimmingSpacesAndTabs: String {
        let utf8 = Array(self.utf8)
        var start = 0, end = utf8.count
        while start < end, utf8[start] == 0x20 || utf8[start] == 0x09 { start += 1 }
        while end > start, utf8[end - 1] == 0x20 || utf8[end - 1] == 0x09 { end -= 1 }
        return String(decoding: utf8[start..<end], as: UTF8.self)
    }
}
