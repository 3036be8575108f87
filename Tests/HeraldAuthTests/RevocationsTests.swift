import Foundation
import HeraldAuth
import Testing

/// What a revocation covers, and how many are kept.
@Suite struct RevocationsTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static func token(_ sub: String?, issued: Date?, jti: String?) -> VerifiedToken {
        VerifiedToken(subject: sub, expires: now.addingTimeInterval(3600), grants: Grants(), issuedAt: issued, id: jti)
    }

    @Test func aRevocationCoversTheTokensItNamesAndNoOthers() {
        let until = Self.now.addingTimeInterval(86_400)
        let byUser = Revocation(scope: .subject("ann"), issuedBefore: Self.now, until: until)
        #expect(byUser.covers(Self.token("ann", issued: Self.now.addingTimeInterval(-1), jti: nil)))
        #expect(byUser.covers(Self.token("ann", issued: nil, jti: nil)), "a token that cannot say when it was issued")
        #expect(!byUser.covers(Self.token("ann", issued: Self.now, jti: nil)), "issued at the time: not before it")
        #expect(!byUser.covers(Self.token("bob", issued: Self.now.addingTimeInterval(-1), jti: nil)))
        let byToken = Revocation(scope: .token("t1"), issuedBefore: nil, until: until)
        #expect(byToken.covers(Self.token("ann", issued: Self.now.addingTimeInterval(60), jti: "t1")), "whenever issued")
        #expect(!byToken.covers(Self.token("ann", issued: nil, jti: "t2")))
        let byTime = Revocation(scope: .all, issuedBefore: Self.now, until: until)
        #expect(byTime.covers(Self.token(nil, issued: nil, jti: nil)) && !byTime.covers(Self.token(nil, issued: Self.now, jti: nil)))

        let kept = Revocations([byUser])
        #expect(kept.covering(Self.token("ann", issued: nil, jti: nil), at: Self.now) == byUser)
        #expect(kept.covering(Self.token("ann", issued: nil, jti: nil), at: until) == nil, "run out at until")
        kept.dropExpired(at: until)
        #expect(kept.count == 0)
    }

    /// A flood of revocations is bounded: past `limit` a new key is refused, while one already kept
    /// is still moved on (the later of each time).
    @Test func atMostTheLimitIsKeptAndALaterRevocationOfAKeptKeyReachesFurther() {
        let kept = Revocations()
        let until = Self.now.addingTimeInterval(60)
        for index in 0..<Revocations.limit {
            #expect(kept.add(Revocation(scope: .token("t\(index)"), issuedBefore: nil, until: until)) != nil)
        }
        let another = Revocation(scope: .token("one-too-many"), issuedBefore: nil, until: until)
        #expect(!kept.accepts(another) && kept.add(another) == nil && kept.count == Revocations.limit)
        let later = Revocation(scope: .token("t7"), issuedBefore: nil, until: until.addingTimeInterval(60))
        #expect(kept.accepts(later) && kept.add(later)?.until == later.until)
        let merged = Revocation(scope: .subject("ann"), issuedBefore: Self.now, until: until)
            .merged(with: Revocation(scope: .subject("ann"), issuedBefore: Self.now.addingTimeInterval(10), until: until.addingTimeInterval(-30)))
        #expect(merged.issuedBefore == Self.now.addingTimeInterval(10) && merged.until == until)
    }
}
