import Foundation
import HeraldJSON
import JWTKit

/// The keys Herald checks tokens with (and `herald token` signs with): one key, or several told apart
/// by `kid` (a JWK Set), each an HMAC secret (HS256), an EC P-256 key (ES256) or an RSA key (RS256).
/// A token is checked with the key its header's `kid` names; only that key's algorithm is accepted: a
/// token whose header names another (`none`, or HS256 signed with a public key's text) is refused
/// before its signature is looked at. With one key and no `kid` on it, a token's `kid` is not needed.
public struct TokenKey: Sendable {
    struct Entry: Sendable {
        /// The key's id (`kid`); nil for the one key of a configuration without ids.
        let kid: String?
        /// jwt-kit's signer or verifier for this key.
        let algorithm: any JWTAlgorithm
        /// What the key signs with, for example the private key's collection (nil for a key that only verifies).
        let collection: JWTKeyCollection
    }

    /// At least one.
    let entries: [Entry]

    /// Most keys in a set, and the longest key file read: a larger one is refused with a message.
    public static let maximumKeys = 64
    public static let maximumFileBytes = 1 << 20

    /// The JWS algorithm names, each once: `HS256`, `ES256`, `RS256`.
    public var name: String { Array(Set(entries.map(\.algorithm.name))).sorted().joined(separator: ", ") }

    /// The keys' ids, in the order they were given (empty for one key without an id).
    public var kids: [String] { entries.compactMap(\.kid) }

    /// The signature of a JWS signing input (`header.payload`) with the first key, for tokens made by
    /// hand (tests, tools).
    public func sign(_ input: [UInt8]) throws -> [UInt8] { try entries[0].algorithm.sign(input) }

    /// The key a token's `kid` names. One key without an id checks every token, whatever its `kid`.
    func entry(for kid: String?) throws(TokenError) -> Entry {
        if entries.count == 1, entries[0].kid == nil { return entries[0] }
        guard let kid else { throw TokenError("the token names no key (kid), and Herald has several: give it one of theirs") }
        guard let entry = entries.first(where: { $0.kid == kid }) else {
            throw TokenError("the token names the key '\(TokenVerifier.printable(kid))' (kid), which Herald does not have")
        }
        return entry
    }

    /// An HS256 secret. Shorter than 32 bytes is refused: RFC 7518 §3.2 asks for a key at least as
    /// long as the hash.
    public static func secret(_ secret: String, kid: String? = nil) async throws(TokenKeyError) -> TokenKey {
        try await Self.secret(bytes: Array(secret.utf8), kid: kid)
    }

    static func secret(bytes: [UInt8], kid: String?) async throws(TokenKeyError) -> TokenKey {
        guard bytes.count >= 32 else {
            throw TokenKeyError("an HS256 secret must be at least 32 bytes long (RFC 7518 §3.2), not \(bytes.count)")
        }
        return try await make(kid: kid) { collection, id in await collection.add(hmac: HMACKey(from: bytes), digestAlgorithm: .sha256, kid: id) }
    }

    /// A public key in PEM: EC P-256 (ES256) or RSA (RS256, at least 2048 bits).
    public static func publicKey(pem: String, kid: String? = nil) async throws(TokenKeyError) -> TokenKey {
        if let key = try? ES256PublicKey(pem: pem) {
            return try await make(kid: kid) { collection, id in await collection.add(ecdsa: key, kid: id) }
        }
        if let key = try? Insecure.RSA.PublicKey(pem: pem) {
            return try await make(kid: kid) { collection, id in await collection.add(rsa: key, digestAlgorithm: .sha256, kid: id) }
        }
        throw TokenKeyError("the public key is neither an EC P-256 (ES256) nor an RSA (RS256) key in PEM")
    }

    /// A private key in PEM, to sign with: EC P-256 (ES256) or RSA (RS256).
    public static func privateKey(pem: String, kid: String? = nil) async throws(TokenKeyError) -> TokenKey {
        if let key = try? ES256PrivateKey(pem: pem) {
            return try await make(kid: kid) { collection, id in await collection.add(ecdsa: key, kid: id) }
        }
        if let key = try? Insecure.RSA.PrivateKey(pem: pem) {
            return try await make(kid: kid) { collection, id in await collection.add(rsa: key, digestAlgorithm: .sha256, kid: id) }
        }
        throw TokenKeyError("the private key is neither an EC P-256 (ES256) nor an RSA (RS256) key in PEM")
    }

    /// A JWK Set (RFC 7517 §5: `{"keys":[…]}`): `oct` keys (HS256, `k` in base64url, at least 32
    /// bytes), `EC` P-256 keys (ES256) and `RSA` keys (RS256), public or private. Every key has a
    /// `kid` when there are several; an `alg`, if given, must be the key's. At most `maximumKeys`.
    public static func keySet(json text: String) async throws(TokenKeyError) -> TokenKey {
        guard text.utf8.count <= maximumFileBytes else { throw TokenKeyError("the key set is longer than \(maximumFileBytes) bytes") }
        let set: JSONValue
        do {
            set = try JSONValue.parse(Array(text.utf8))
        } catch {
            throw TokenKeyError("the key set is not JSON: \(error)")
        }
        guard case .array(let keys)? = set["keys"], !keys.isEmpty else { throw TokenKeyError("the key set has no \"keys\" array of keys") }
        guard keys.count <= maximumKeys else { throw TokenKeyError("the key set has \(keys.count) keys; at most \(maximumKeys)") }
        var entries: [Entry] = []
        for (index, key) in keys.enumerated() {
            let kid = key["kid"]?.stringValue
            let named = kid.map { "'\(TokenVerifier.printable($0))'" } ?? "\(index + 1)"
            guard keys.count == 1 || kid != nil else { throw TokenKeyError("key \(named) of the set has no kid: with several keys, each needs one") }
            if let kid, entries.contains(where: { $0.kid == kid }) { throw TokenKeyError("two keys of the set have the kid \(named)") }
            let made: TokenKey
            switch key["kty"]?.stringValue {
            case "oct":
                guard let k = key["k"]?.stringValue, let secret = TokenVerifier.base64URLDecoded(ArraySlice(k.utf8)) else {
                    throw TokenKeyError("key \(named) of the set (oct) has no k in base64url")
                }
                made = try await Self.secret(bytes: Array(secret), kid: kid)
            case "EC", "RSA":
                let jwk: JWK
                do {
                    jwk = try JWK(json: String(decoding: key.bytes, as: UTF8.self))
                } catch {
                    throw TokenKeyError("key \(named) of the set is not a JWK jwt-kit reads: \(error)")
                }
                guard kid != nil else { throw TokenKeyError("key \(named) of the set (\(key["kty"]?.stringValue ?? "")) needs a kid") }
                made = try await make(kid: kid) { collection, _ in _ = try? await collection.add(jwk: jwk) }
            default:
                throw TokenKeyError("key \(named) of the set is of kty '\(TokenVerifier.printable(key["kty"]?.stringValue ?? "(none)"))'; "
                                    + "Herald reads oct (HS256), EC (ES256, P-256) and RSA (RS256)")
            }
            if let alg = key["alg"]?.stringValue, alg != made.name {
                throw TokenKeyError("key \(named) of the set says alg \(TokenVerifier.printable(alg)), but it is an \(made.name) key")
            }
            entries += made.entries
        }
        return TokenKey(entries: entries)
    }

    /// A key file's text: a JWK Set when it starts with `{`, else what `single` reads (a secret or a PEM).
    public static func file(_ text: String, single: (String) async throws(TokenKeyError) -> TokenKey) async throws(TokenKeyError) -> TokenKey {
        if text.drop(while: \.isWhitespace).hasPrefix("{") { return try await keySet(json: text) }
        return try await single(text)
    }

    /// jwt-kit keeps keys in an actor; Herald reads the algorithm out once, when the key is read, and
    /// verifies on its own threads without a hop.
    private static func make(kid: String?, _ add: @Sendable (JWTKeyCollection, JWKIdentifier?) async -> Void) async throws(TokenKeyError) -> TokenKey {
        let collection = JWTKeyCollection()
        let id = kid.map { JWKIdentifier(string: $0) }
        do {
            await add(collection, id)
            let algorithm = try await collection.getKey(for: id)
            return TokenKey(entries: [Entry(kid: kid, algorithm: algorithm, collection: collection)])
        } catch {
            throw TokenKeyError("the key cannot be used: \(error)")
        }
    }
}

/// Why a key cannot be used.
public struct TokenKeyError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) { self.description = description }
}
