import HeraldHTTP
import HTTPTypes

/// One file of the live page, with its validator.
struct PageFile: Sendable {
    let body: [UInt8]
    let contentType: String
    /// A strong validator: FNV-1a of the bytes.
    let etag: String

    init(_ bytes: [UInt8], contentType: String) {
        body = bytes
        self.contentType = contentType
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        etag = "\"\(String(hash, radix: 16))\""
    }

    /// 304 when the client has this version (weak comparison, RFC 9110 §13.1.2: `W/"x"` matches
    /// `"x"`, and `*` matches any), else the file; browsers revalidate every time. A 304 carries the
    /// 200's Content-Length: libmicrohttpd sends the length of the body it is given and never the body.
    func response(to request: Request) -> Response {
        let headers: HTTPFields = [
            .eTag: etag, .cacheControl: "no-cache", .xContentTypeOptions: "nosniff",
            .contentSecurityPolicy: Self.policy, .referrerPolicy: "no-referrer",
        ]
        if let tags = request.header(.ifNoneMatch), Self.matches(tags, etag) {
            return Response(status: .notModified, headers: headers, body: .bytes(body))
        }
        return Response(status: .ok, headers: [.contentType: contentType] + headers, body: .bytes(body))
    }

    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingSpaces
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// Only this origin, no inline script or style, no framing.
    static let policy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}
