import Foundation
import JWTKit

/// The key Herald checks tokens with (and `herald token` signs with): an HMAC secret (HS256), or a
/// PEM key for ES256 or RS256. Only the algorithm the key is for is accepted: a token whose header
/// names another (`none`, or HS256 signed with a public key's text) is refused before its signature
/// is looked at.
public struct TokenKey: Sendable {
    /// jwt-kit's signer or verifier for this key.
    let algorithm: any JWTAlgorithm
    /// What the key signs, for example the private key's collection (nil for a key that only verifies).
    let collection: JWTKeyCollection

    /// The JWS algorithm name: `HS256`, `ES256` or `RS256`.
    public var name: String { algorithm.name }

    /// The signature of a JWS signing input (`header.payload`), for tokens made by hand (tests, tools).
    public func sign(_ input: [UInt8]) throws -> [UInt8] { try algorithm.sign(input) }

    /// An HS256 secret. Shorter than 32 bytes is refused: RFC 7518 §3.2 asks for a key at least as
    /// long as the hash.
    public static func secret(_ secret: String) async throws(TokenKeyError) -> TokenKey {
        guard secret.utf8.count >= 32 else {
            throw TokenKeyError("an HS256 secret must be at least 32 bytes long (RFC 7518 §3.2), not \(secret.utf8.count)")
        }
        return try await make { collection in await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256) }
    }

    /// A public key in PEM: EC P-256 (ES256) or RSA (RS256, at least 2048 bits).
    public static func publicKey(pem: String) async throws(TokenKeyError) -> TokenKey {
        if let key = try? ES256PublicKey(pem: pem) {
            return try await make { collection in await collection.add(ecdsa: key) }
        }
        if let key = try? Insecure.RSA.PublicKey(pem: pem) {
            return try await make { collection in await collection.add(rsa: key, digestAlgorithm: .sha256) }
        }
        throw TokenKeyError("the public key is neither an EC P-256 (ES256) nor an RSA (RS256) key in PEM")
    }

    /// A private key in PEM, to sign with: EC P-256 (ES256) or RSA (RS256).
    public static func privateKey(pem: String) async throws(TokenKeyError) -> TokenKey {
        if let key = try? ES256PrivateKey(pem: pem) {
            return try await make { collection in await collection.add(ecdsa: key) }
        }
        if let key = try? Insecure.RSA.PrivateKey(pem: pem) {
            return try await make { collection in await collection.add(rsa: key, digestAlgorithm: .sha256) }
        }
        throw TokenKeyError("the private key is neither an EC P-256 (ES256) nor an RSA (RS256) key in PEM")
    }

    /// jwt-kit keeps keys in an actor; Herald reads the algorithm out once, at start, and verifies on
    /// its own threads without a hop.
    private static func make(_ add: @Sendable (JWTKeyCollection) async -> Void) async throws(TokenKeyError) -> TokenKey {
        let collection = JWTKeyCollection()
        do {
            await add(collection)
            let algorithm = try await collection.getKey()
            return TokenKey(algorithm: algorithm, collection: collection)
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
