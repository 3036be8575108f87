public import Foundation
public import JWTKit

/// The claims Herald reads: `exp` (required), `nbf`, `sub`, `iat` and `jti` (what a revocation
/// names), and `herald: {publish, subscribe, admin}`.
public struct TokenClaims: JWTPayload, Equatable {
    public var exp: ExpirationClaim?
    public var nbf: NotBeforeClaim?
    public var sub: SubjectClaim?
    public var iat: IssuedAtClaim?
    public var jti: IDClaim?
    public var herald: Grants?

    public init(subject: String?, expires: Date, notBefore: Date? = nil, issuedAt: Date? = nil, id: String? = nil, grants: Grants) {
        exp = ExpirationClaim(value: expires)
        nbf = notBefore.map { NotBeforeClaim(value: $0) }
        sub = subject.map { SubjectClaim(value: $0) }
        iat = issuedAt.map { IssuedAtClaim(value: $0) }
        jti = id.map { IDClaim(value: $0) }
        herald = grants
    }

    /// jwt-kit's check; Herald calls `TokenVerifier.check(_:at:)`, which gives each failure its reason.
    public func verify(using _: some JWTAlgorithm) async throws {
        guard let exp else { throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "no exp") }
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}
