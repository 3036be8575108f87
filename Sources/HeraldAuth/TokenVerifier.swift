import Foundation
import JWTKit
import Synchronization

/// A token whose signature and times were checked.
public struct VerifiedToken: Sendable, Equatable {
    /// The `sub` claim: the user, who bids as this name.
    public let subject: String?
    public let expires: Date
    public let grants: Grants
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

    let key: TokenKey
    private let parser = DefaultJWTParser()
    /// Tokens whose signature checked out: a client sends the same token with every request, and
    /// parsing and checking it again cost more than the change itself (BENCHMARKS.md). Its times are
    /// checked on every use.
    private let checked = CheckedTokens()

    public init(key: TokenKey) { self.key = key }

    /// The algorithm tokens must be signed with.
    public var algorithm: String { key.name }

    public func verify(_ token: String, at now: Date = Date()) throws(TokenError) -> VerifiedToken {
        if let claims = checked[token] { return try Self.check(claims, at: now) }
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maximumLength else { throw TokenError("the token is longer than \(Self.maximumLength) bytes") }
        guard let lastDot = bytes.lastIndex(of: UInt8(ascii: ".")) else { throw TokenError("the token is not a JWT (header.payload.signature)") }
        let header: JWTHeader, claims: TokenClaims, signature: Data
        do {
            (header, claims, signature) = try parser.parse(bytes, as: TokenClaims.self)
        } catch {
            throw TokenError("the token is not a well-formed JWT")
        }
        guard header.alg == key.name else {
            throw TokenError("the token is signed with '\(Self.printable(header.alg ?? "(none)"))'; Herald accepts \(key.name) only")
        }
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

    /// The claims' times: `exp` must be there and later than now, `nbf` (if any) not later.
    static func check(_ claims: TokenClaims, at now: Date) throws(TokenError) -> VerifiedToken {
        guard let expires = claims.exp?.value else { throw TokenError("the token has no exp claim") }
        guard expires > now else { throw TokenError("the token expired at \(Self.time(expires))") }
        if let notBefore = claims.nbf?.value, notBefore > now {
            throw TokenError("the token is not valid before \(Self.time(notBefore))")
        }
        return VerifiedToken(subject: claims.sub?.value, expires: expires, grants: claims.herald ?? Grants())
    }

    private static func time(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// Printable ASCII, at most 40 characters: a header value quoted in a reason.
    private static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }
}

/// The claims of tokens whose signature was checked, by token. At most `capacity`: when full it is
/// emptied (the tokens in use come back at the cost of one check each).
final class CheckedTokens: Sendable {
    static let capacity = 4096
    private let claims = Mutex<[String: TokenClaims]>([:])

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
