public import HTTPTypes
public import HeraldJSON

/// An RFC 9457 problem: every error Herald answers is one, as `application/problem+json`.
public struct Problem: Error, Sendable {
    public let status: HTTPResponse.Status
    public let title: String
    public let detail: String
    /// Members beyond type, title, status and detail (such as `errors` or `price`).
    public var extra: [(String, JSONValue)]
    public var headers: HTTPFields

    public init(status: HTTPResponse.Status, detail: String, title: String? = nil, extra: [(String, JSONValue)] = [],
                headers: HTTPFields = [:]) {
        self.status = status
        self.title = title ?? Problem.reason(status.code)
        self.detail = detail
        self.extra = extra
        self.headers = headers
    }

    /// `type` is a stable relative URI naming the kind of problem.
    public var type: String { "/problems/" + title.lowercased().split(separator: " ").joined(separator: "-") }

    public var json: JSONValue {
        .object([("type", .string(type)), ("title", .string(title)), ("status", .integer(status.code)), ("detail", .string(detail))] + extra)
    }

    public var response: Response {
        Response(status: status, headers: [.contentType: "application/problem+json"] + headers, body: .bytes(json.bytes))
    }

    /// The reason phrase RFC 9110 (§15) gives `status`, and RFC 6585's for 428, 429 and 431: every
    /// client and server error has its own. It names the problem's `type`, which clients may match.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 400..<500: "Client Error"
        default: "Server Error"
        }
    }
}
