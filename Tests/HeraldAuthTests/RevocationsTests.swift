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
        // Each is read back from its key, as a store and a replica's message give it.
        for revocation in [byUser, byToken, byTime] {
            #expect(Revocation(key: revocation.key, issuedBefore: revocation.issuedBefore, until: until) == revocation, "\(revocation.key)")
        }
        #expect(Revocation(key: "all", issuedBefore: nil, until: until) == nil, "every token, issued before no time")
        #expect(Revocation(key: "kid:a", issuedBefore: Self.now, until: until) == nil)

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
        #expect(!kept.hold(another) && kept.add(another) == nil && kept.count == Revocations.limit)
        let later = Revocation(scope: .token("t7"), issuedBefore: nil, until: until.addingTimeInterval(60))
        #expect(kept.hold(later) && kept.add(later, held: true)?.until == later.until)
        #expect(kept.count == Revocations.limit)
    }

    /// Places are held while revocations are stored: of many held at once near the limit, only as
    /// many as there are places are let through, and a place given up is free again. (Checked, then
    /// added after the store, two concurrent requests at 9,999 were both kept, in the store only.)
    @Test func aPlaceIsHeldWhileARevocationIsStored() {
        let kept = Revocations()
        let until = Self.now.addingTimeInterval(60)
        for index in 0..<(Revocations.limit - 2) {
            #expect(kept.add(Revocation(scope: .token("t\(index)"), issuedBefore: nil, until: until)) != nil)
        }
        let candidates = (0..<4).map { Revocation(scope: .token("new\($0)"), issuedBefore: nil, until: until) }
        let held = candidates.filter { kept.hold($0) }
        #expect(held.count == 2, "two places left")
        #expect(kept.hold(candidates[0]), "a key held already has its place")
        kept.release(candidates[0])
        kept.release(held[0])
        #expect(kept.hold(candidates[3]), "a place given up is free again")
        #expect(kept.add(held[1], held: true) != nil && kept.add(candidates[3], held: true) != nil)
        #expect(kept.count == Revocations.limit)
        #expect(!kept.hold(candidates[2]) && kept.add(candidates[2]) == nil)
        let merged = Revocation(scope: .subject("ann"), issuedBefore: Self.now, until: until)
            .merged(with: Revocation(scope: .subject("ann"), issuedBefore: Self.now.addingTimeInterval(10), until: until.addingTimeInterval(-30)))
        #expect(merged.issuedBefore == Self.now.addingTimeInterval(10) && merged.until == until)
    }
}
