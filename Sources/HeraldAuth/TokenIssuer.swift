import JWTKit

/// Signs tokens: for `herald token`, and for tests. With several keys, `kid` names the one to sign
/// with (and goes into the token's header); with one, the token carries its `kid` if it has one.
public struct TokenIssuer: Sendable {
    let key: TokenKey
    let kid: String?

    public init(key: TokenKey, kid: String? = nil) { (self.key, self.kid) = (key, kid) }

    public func sign(_ claims: TokenClaims) async throws -> String {
        let entry: TokenKey.Entry
        if let kid {
            guard let named = key.entries.first(where: { $0.kid == kid }) else {
                throw TokenKeyError("no key has the kid '\(TokenVerifier.printable(kid))'; the keys: \(key.kids.joined(separator: ", "))")
            }
            entry = named
        } else {
            guard key.entries.count == 1 else { throw TokenKeyError("the key set has several keys: name one with its kid (\(key.kids.joined(separator: ", ")))") }
            entry = key.entries[0]
        }
        return try await entry.collection.sign(claims, kid: entry.kid.map { JWKIdentifier(string: $0) })
    }
}
