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
        etag = Fingerprint.tag(bytes)
    }

    /// 304 when the client has this version (weak comparison, RFC 9110 §13.1.2: `W/"x"` matches
    /// `"x"`, and `*` matches any), else the file; browsers revalidate every time. A 304 carries the
    /// 200's Content-Length: libmicrohttpd sends the length of the body it is given and never the body.
    func response(to request: Request) -> Response {
        let headers: HTTPFields = [
            .eTag: etag, .cacheControl: "no-cache", .xContentTypeOptions: "nosniff",
            .contentSecurityPolicy: Self.policy, .referrerPolicy: "no-referrer",
        ]
        // A malformed If-None-Match names no version: the page is served.
        if Preconditions(request).notModified(etag) {
            return Response(status: .notModified, headers: headers, body: .bytes(body))
        }
        return Response(status: .ok, headers: [.contentType: contentType] + headers, body: .bytes(body))
    }

    /// Only this origin, no inline script or style, no framing.
    static let policy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}
