import HTTPTypes
import HeraldHTTP
import HeraldJSON

/// A list route's cursor paging, `?limit=&after=`: at most `limit` entries (default 100, at most
/// 1,000) that come after the entry named `after`, in the list's order. The answer's `next` (and its
/// `Link: <…>; rel="next"` header) is the address of the following page, or null on the last one. A
/// cursor names a place, not a position, so entries added or removed meanwhile neither repeat nor
/// go missing.
struct Paging {
    static let defaultLimit = 100
    static let maximumLimit = 1_000

    let limit: Int
    /// The cursor as sent: the key of the previous page's last entry.
    let after: String?

    /// Reads `limit` and `after`; 400 when `limit` is not a whole number from 1 to 1,000.
    init(_ request: Request) throws {
        after = request.query("after")
        guard let text = request.query("limit") else {
            limit = Self.defaultLimit
            return
        }
        guard text.utf8.count <= 4, text.isASCIIDigits,
              let limit = Int(text), (1...Self.maximumLimit).contains(limit) else {
            throw Problem(status: .badRequest, detail: "limit must be a whole number from 1 to \(Self.maximumLimit), not '\(text)'")
        }
        self.limit = limit
    }

    /// The cursor of a list ordered by number (bids, auctions, trips): 0 when absent; 400 when it is
    /// not a whole number.
    func numericAfter() throws -> Int {
        guard let after else { return 0 }
        guard after.utf8.count <= 18, after.isASCIIDigits, let number = Int(after) else {
            throw Problem(status: .badRequest, detail: "after must be the id of an entry of the previous page, a whole number, not '\(after)'")
        }
        return number
    }

    /// The page from `entries` that already follow the cursor, in order: their first `limit`, and
    /// whether more follow.
    func page<Entries: Sequence>(_ entries: Entries) -> (entries: [Entries.Element], more: Bool) {
        var page: [Entries.Element] = []
        page.reserveCapacity(min(limit, 64))
        for entry in entries {
            if page.count == limit { return (page, true) }
            page.append(entry)
        }
        return (page, false)
    }

    /// `{name: [entries…], "next": …}`, where `next` continues after `lastKey` (the page's last
    /// entry) when `more`, keeping the request's other query arguments.
    func response(_ name: String, _ entries: [JSONValue], more: Bool, lastKey: String?, request: Request,
                  headers: HTTPFields = [:]) -> Response {
        guard more, let lastKey else { return .json(.object([(name, .array(entries)), ("next", .null)]), headers: headers) }
        var arguments = request.query.filter { $0.name != "limit" && $0.name != "after" }
        arguments.append(("limit", String(limit)))
        arguments.append(("after", lastKey))
        let next = request.path + "?" + arguments.map { Self.escaped($0.name) + "=" + Self.escaped($0.value) }.joined(separator: "&")
        var fields = headers
        fields[.link] = "<\(next)>; rel=\"next\""
        return .json(.object([(name, .array(entries)), ("next", .string(next))]), headers: fields)
    }

    /// `text` with everything but RFC 3986's unreserved characters percent-encoded.
    private static func escaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }
}
