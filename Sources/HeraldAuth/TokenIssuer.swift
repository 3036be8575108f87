import JWTKit

/// Signs tokens: for `herald token`, and for tests.
public struct TokenIssuer: Sendable {
    let key: TokenKey

    public init(key: TokenKey) { self.key = key }

    public func sign(_ claims: TokenClaims) async throws -> String {
        try await key.collection.sign(claims)
    }
}
