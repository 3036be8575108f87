public import Foundation
import HeraldJSON
import HeraldThreads
import JWTKit
import Synchronization

/// A token whose signature and times were checked.
public struct VerifiedToken: Sendable, Equatable {
    /// The `sub` claim: the user, who bids as this name.
    public let subject: String?
    public let expires: Date
    public let grants: Grants
    /// The `iat` and `jti` claims, if the token has them: what a revocation names.
    public let issuedAt: Date?
    public let id: String?

    /// Claims already verified, as another replica forwards them (`RenewalForwarding`).
    public init(subject: String?, expires: Date, grants: Grants, issuedAt: Date? = nil, id: String? = nil) {
        (self.subject, self.expires, self.grants, self.issuedAt, self.id) = (subject, expires, grants, issuedAt, id)
    }
}

/// Why a token is refused; each becomes a 401 with its reason.
public struct TokenError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}

/// Checks tokens synchronously, on the thread that serves the request: jwt-kit parses the token and
/// checks the signature (`JWTAlgorithm.verify`), Herald checks the header's algorithm and the times.
public struct TokenVerifier: Sendable {
    /// Longest token read (bytes); a longer one is refused unread.
    public static let maximumLength = 8192

    /// The keys, replaced whole by `reload` (`SIGHUP`): a request checks with the keys it read.
    private let keys: Lock<TokenKey>
    private let parser = DefaultJWTParser()
    /// Tokens whose signature checked out: a client sends the same token with every request, and
    /// parsing and checking it again cost more than the change itself (`git show dad6eb7:BENCHMARKS.md`). Its times are
    /// checked on every use.
    private let checked = CheckedTokens()

    public init(key: TokenKey) { keys = Lock(key) }

    /// The keys tokens are checked with now.
    public var key: TokenKey { keys.withLock { $0 } }

    /// The algorithms tokens may be signed with.
    public var algorithm: String { key.name }

    /// Checks tokens with `key` from now on: a token whose key is gone is refused at its next use (a
    /// stream it opened runs on until its end, or until it is renewed with a token of a key there is).
    public func reload(_ key: TokenKey) {
        keys.withLock { $0 = key }
        checked.removeAll()
    }

    public func verify(_ token: String, at now: Date = Date()) throws(TokenError) -> VerifiedToken {
        if let claims = checked[token] { return try Self.check(claims, at: now) }
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maximumLength else { throw TokenError("the token is longer than \(Self.maximumLength) bytes") }
        guard let lastDot = bytes.lastIndex(of: UInt8(ascii: ".")) else { throw TokenError("the token is not a JWT (header.payload.signature)") }
        try Self.checkStrictJSON(bytes[..<lastDot])
        let header: JWTHeader, claims: TokenClaims, signature: Data
        do {
            (header, claims, signature) = try parser.parse(bytes, as: TokenClaims.self)
        } catch {
            throw TokenError("the token is not a well-formed JWT")
        }
        let key = try self.key.entry(for: header.kid)
        guard header.alg == key.algorithm.name else {
            throw TokenError("the token is signed with '\(Self.printable(header.alg ?? "(none)"))'; Herald accepts \(key.algorithm.name) only"
                             + (key.kid.map { " for the key '\(Self.printable($0))'" } ?? ""))
        }
        // RFC 7515 §4.1.11: an extension listed as critical must be understood, and Herald knows none.
        guard header.fields["crit"] == nil else { throw TokenError("the token's header lists a critical extension ('crit') Herald does not understand") }
        let valid: Bool
        do {
            valid = try key.algorithm.verify(signature, signs: bytes[..<lastDot])
        } catch {
            valid = false
        }
        guard valid else { throw TokenError("the token's signature does not match Herald's key") }
        let verified = try Self.check(claims, at: now)
        checked[token] = claims
        return verified
    }

    /// The latest expiry Herald keeps: the end of the year 9999. A later `exp` (9999999999999999999 and
    /// 1e300 are common "never expires" values) means no expiry within any deadline Herald keeps, and
    /// is read as this, so that no arithmetic on it can overflow.
    public static let latestExpiry = Date(timeIntervalSince1970: 253_402_300_799)

    /// The claims' times: `exp` must be there and later than now, `nbf` (if any) not later.
    static func check(_ claims: TokenClaims, at now: Date) throws(TokenError) -> VerifiedToken {
        guard let claimed = claims.exp?.value else { throw TokenError("the token has no exp claim") }
        guard claimed.timeIntervalSince1970.isFinite else { throw TokenError("the token's exp is not a time") }
        let expires = min(claimed, Self.latestExpiry)
        guard expires > now else { throw TokenError("the token expired at \(Self.time(expires))") }
        if let notBefore = claims.nbf?.value, notBefore > now {
            throw TokenError("the token is not valid before \(Self.time(notBefore))")
        }
        let issuedAt = claims.iat?.value.timeIntervalSince1970.isFinite == true ? claims.iat?.value : nil
        return VerifiedToken(subject: claims.sub?.value, expires: expires, grants: claims.herald ?? Grants(), issuedAt: issuedAt, id: claims.jti?.value)
    }

    /// The header and the payload must each be one JSON object under Herald's strict parser: a claim
    /// named twice (`{"exp": later, "exp": 1}`) is refused (RFC 7519 §4), as in every request body,
    /// rather than read one way here and another by whoever issued the token.
    static func checkStrictJSON(_ signed: ArraySlice<UInt8>) throws(TokenError) {
        let parts = signed.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw TokenError("the token is not a JWT (header.payload.signature)") }
        for (part, name) in zip(parts, ["header", "payload"]) {
            guard let json = Self.base64URLDecoded(part) else { throw TokenError("the token's \(name) is not base64url") }
            let value: JSONValue
            do {
                value = try JSONValue.parse(json)
            } catch {
                throw TokenError("the token's \(name) is not strict JSON: \(error)")
            }
            guard case .object = value else { throw TokenError("the token's \(name) is not a JSON object") }
        }
    }

    /// Base64url without padding (RFC 7515 §2), as JWTs carry it; nil if it is not that.
    static func base64URLDecoded(_ text: ArraySlice<UInt8>) -> Data? {
        var bytes = text.map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "-"): UInt8(ascii: "+")
            case UInt8(ascii: "_"): UInt8(ascii: "/")
            default: byte
            }
        }
        guard !bytes.contains(UInt8(ascii: "=")), bytes.count % 4 != 1 else { return nil }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(bytes))
    }

    private static func time(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// Printable ASCII, at most 40 characters: a header value quoted in a reason.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }
}

/// The claims of tokens whose signature was checked, by token. At most `capacity`: when full it is
/// emptied (the tokens in use come back at the cost of one check each).
final class CheckedTokens: Sendable {
    static let capacity = 4096
    private let claims = Lock<[String: TokenClaims]>([:])

    func removeAll() { claims.withLock { $0.removeAll() } }

    subscript(token: String) -> TokenClaims? {
        get { claims.withLock { $0[token] } }
        set {
            claims.withLock { claims in
                if claims.count >= Self.capacity { claims.removeAll(keepingCapacity: true) }
                claims[token] = newValue
            }
        }
    }
}
