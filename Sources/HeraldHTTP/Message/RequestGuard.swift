import HTTPTypes
import HeraldJSON

/// Checks a request's head before Herald reads its body: framing that two parsers could read two ways
/// (RFC 9112 §6.1, §6.3), a missing or repeated `Host` (§3.2), a host this server does not answer to
/// (DNS rebinding). A refused request is answered and its connection closed, so no byte after the
/// head is ever read as another request.
public struct RequestGuard: Sendable {
    /// Every `Host` value accepted as it is compared (lower case): each name alone and with the port
    /// the server listens on, and each `name:port` given; nil: any host. A few are compared in turn
    /// (hashing the host cost more than the comparisons); a longer list is a set.
    private let accepted: AcceptedHosts?
    /// Names accepted with any port (`name:*`): the loopback names by default on loopback, so that a
    /// proxy on this machine may pass its own `Host` on (`localhost:8080` in front of Herald on 8081).
    private let anyPort: [String]

    private enum AcceptedHosts: Sendable {
        case few([String])
        case many(Set<String>)

        init(_ hosts: [String]) {
            let distinct = Array(Set(hosts))
            self = distinct.count <= 8 ? .few(distinct) : .many(Set(distinct))
        }

        func contains(_ host: String) -> Bool {
            switch self {
            case .few(let hosts): hosts.contains(host)
            case .many(let hosts): hosts.contains(host)
            }
        }
    }

    /// - Parameters:
    ///   - allowedHosts: host names (`localhost`) or names with a port (`example.org:8080`) this server
    ///     answers to; nil: any host.
    ///   - port: the port the server listens on (a name alone also stands for `name:port`).
    ///     A name with `:*` (`localhost:*`) is accepted with any port, and alone.
    public init(allowedHosts: [String]? = nil, port: Int = 0) {
        let lowered = allowedHosts?.map { $0.lowercased() }
        anyPort = lowered?.filter { $0.hasSuffix(":*") }.map { String($0.dropLast(2)) } ?? []
        accepted = lowered.map { hosts in
            AcceptedHosts(hosts.flatMap { host -> [String] in
                if host.hasSuffix(":*") { return [String(host.dropLast(2))] }
                return Self.split(host).1 == nil ? [host, host + ":" + String(port)] : [host]
            })
        }
    }

    /// Throws the problem that refuses this head; else returns the declared `Content-Length` (nil when
    /// there is none, or it is past `Int`, which libmicrohttpd has answered itself). `headers` are as
    /// received, names unchanged.
    public func check(version: String, headers: [(name: String, value: String)], authority: String?) throws(Problem) -> Int? {
        // The first of each and how many (no arrays: this runs for every request); transfer codings are rare.
        var (contentLength, contentLengthCount): (String?, Int) = (nil, 0)
        var (firstHost, hostCount): (String?, Int) = (nil, 0)
        var transferEncodings: [String] = []
        // By index: each field is looked at where it is, not copied out (a retain and a release of
        // its name and value).
        for index in headers.indices {
            guard Self.isToken(headers[index].name) else {
                throw Self.refuse(.badRequest, "the header name '\(Self.printable(headers[index].name))' is not a token (a space before the colon?)")
            }
            // Only the three names that matter are compared (no lower-casing of every name).
            switch headers[index].name.utf8.count {
            case 4 where Self.equalsIgnoringCase(headers[index].name, "host"):
                if hostCount == 0 { firstHost = headers[index].value }
                hostCount += 1
            case 14 where Self.equalsIgnoringCase(headers[index].name, "content-length"):
                if contentLengthCount == 0 { contentLength = headers[index].value }
                contentLengthCount += 1
            case 17 where Self.equalsIgnoringCase(headers[index].name, "transfer-encoding"): transferEncodings.append(headers[index].value)
            default: break
            }
        }
        if !transferEncodings.isEmpty {
            if contentLengthCount > 0 {
                throw Self.refuse(.badRequest, "Content-Length and Transfer-Encoding together make the body's length ambiguous")
            }
            guard version == "HTTP/1.1" else { throw Self.refuse(.badRequest, "Transfer-Encoding needs HTTP/1.1") }
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces.lowercased() }
            guard codings == ["chunked"] else {
                throw Self.refuse(.notImplemented, "the only transfer coding Herald reads is chunked, alone, not '\(Self.printable(transferEncodings.joined(separator: ", ")))'")
            }
        }
        if contentLengthCount > 1 { throw Self.refuse(.badRequest, "more than one Content-Length") }
        if let length = contentLength, !length.isASCIIDigits {
            throw Self.refuse(.badRequest, "Content-Length must be digits, not '\(Self.printable(length))'")
        }
        if hostCount > 1 { throw Self.refuse(.badRequest, "more than one Host header") }
        if version == "HTTP/1.1", hostCount == 0 { throw Self.refuse(.badRequest, "an HTTP/1.1 request needs a Host header") }
        let declared = contentLength.flatMap { Int($0) }
        guard let host = authority ?? firstHost else { return declared }
        guard Self.isValidHost(host) else { throw Self.refuse(.badRequest, "the Host '\(Self.printable(host))' is not a host and port") }
        // Most clients send the name as listed, in lower case: no copy made then.
        if let accepted {
            let lower = host.utf8AllSatisfy({ $0 < 0x41 || $0 > 0x5A }) ? host : host.lowercased()
            guard accepted.contains(lower) || (!anyPort.isEmpty && anyPort.contains(Self.split(lower).0)) else {
                throw Self.refuse(.misdirectedRequest, "this server does not answer to the host '\(Self.printable(host))' (see --allowed-hosts)")
            }
        }
        return declared
    }

    /// ASCII case-insensitive equality with a lower-case `name`.
    static func equalsIgnoringCase(_ text: String, _ name: StaticString) -> Bool {
        let other = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        guard text.utf8.count == other.count else { return false }
        let equal = { (bytes: UnsafeBufferPointer<UInt8>) in zip(bytes, other).allSatisfy { ($0 | 0x20) == $1 } }
        return text.utf8.withContiguousStorageIfAvailable(equal) ?? zip(text.utf8, other).allSatisfy { ($0 | 0x20) == $1 }
    }

    /// `name:port`, `[v6]:port`, or a name alone.
    private static func split(_ host: String) -> (String, String?) {
        guard let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") else { return (host, nil) }
        let name = String(host[..<colon])
        if host.hasPrefix("["), !name.hasSuffix("]") { return (host, nil) }
        return (name, String(host[host.index(after: colon)...]))
    }

    private static func isValidHost(_ host: String) -> Bool {
        !host.isEmpty && host.utf8.count <= 255 && host.utf8AllSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == 0x2D || byte == 0x2E || byte == 0x3A || byte == 0x5B || byte == 0x5D || byte == 0x5F
        }
    }

    /// Whether `name` may be a header name (RFC 9110 §5.6.2 `token`).
    public static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8AllSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || isTokenPunctuation(byte)
        }
    }

    private static func isTokenPunctuation(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static func refuse(_ status: HTTPResponse.Status, _ detail: String) -> Problem {
        Problem(status: status, detail: detail, headers: [.connection: "close"])
    }

    /// A value as it may be quoted in a detail: printable ASCII, at most 100 characters.
    public static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(100).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional white space).
    public var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
