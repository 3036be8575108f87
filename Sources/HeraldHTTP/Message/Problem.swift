import HeraldJSON

/// An RFC 9457 problem: every error Herald answers is one, as `application/problem+json`.
public struct Problem: Error, Sendable {
    public let status: Int
    public let title: String
    public let detail: String
    /// Members beyond type, title, status and detail (such as `errors` or `price`).
    public var extra: [(String, JSONValue)]
    public var headers: [(name: String, value: String)]

    public init(status: Int, detail: String, title: String? = nil, extra: [(String, JSONValue)] = [],
                headers: [(name: String, value: String)] = []) {
        self.status = status
        self.title = title ?? Problem.reason(status)
        self.detail = detail
        self.extra = extra
        self.headers = headers
    }

    /// `type` is a stable relative URI naming the kind of problem.
    public var type: String { "/problems/" + title.lowercased().split(separator: " ").joined(separator: "-") }

    public var json: JSONValue {
        .object([("type", .string(type)), ("title", .string(title)), ("status", .integer(status)), ("detail", .string(detail))] + extra)
    }

    public var response: Response {
        Response(status: status, headers: [("Content-Type", "application/problem+json")] + headers, body: .bytes(json.bytes))
    }

    /// The standard reason phrase of `status`.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
