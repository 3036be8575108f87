import HeraldHTTP

/// One file of the live page, with its validator.
struct PageFile: Sendable {
    let body: [UInt8]
    let contentType: String
    /// A strong validator: FNV-1a of the bytes.
    let etag: String

    init(_ text: String, contentType: String) {
        body = Array(text.utf8)
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
        let headers: [(name: String, value: String)] = [
            ("ETag", etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", Self.policy), ("Referrer-Policy", "no-referrer"),
        ]
        if let tags = request.header("If-None-Match"), Self.matches(tags, etag) {
            return Response(status: 304, headers: headers, body: .bytes(body))
        }
        return Response(status: 200, headers: [("Content-Type", contentType)] + headers, body: .bytes(body))
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

extension Routes {
    /// The live page at `/`: HTML, script and style, embedded in the binary.
    mutating func addPage() {
        let files = [
            ("/", PageFile(WebAssets.indexHTML, contentType: "text/html; charset=utf-8")),
            ("/app.js", PageFile(WebAssets.appJS, contentType: "text/javascript; charset=utf-8")),
            ("/app.css", PageFile(WebAssets.appCSS, contentType: "text/css; charset=utf-8")),
            ("/favicon.svg", PageFile(WebAssets.faviconSVG, contentType: "image/svg+xml")),
            // Browsers ask for this one on their own; an SVG there is shown by every current browser.
            ("/favicon.ico", PageFile(WebAssets.faviconSVG, contentType: "image/svg+xml")),
        ]
        for (path, file) in files {
            add("GET", path) { request in file.response(to: request) }
        }
    }
}
