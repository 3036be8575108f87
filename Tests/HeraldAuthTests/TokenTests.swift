import Foundation
@testable import HeraldAuth
import HeraldTestSupport
import Testing

/// Tokens without a server: grants' patterns, the checks of a token's times, keys.
@Suite struct TokenTests {
    static let secret = "herald-test-secret-0123456789abcdef"

    @Test func patternsMatchATopicOrAPrefixEndingInAStar() {
        #expect(Grants.matches("*", "units/scout"))
        #expect(Grants.matches("auctions/*", "auctions/7"))
        #expect(!Grants.matches("auctions/*", "auctions"))
        #expect(!Grants.matches("auctions/*", "auctionsX/7"))
        #expect(Grants.matches("notifications/door.*", "notifications/door.front"))
        #expect(!Grants.matches("notifications/door.*", "notifications/window"))
        #expect(Grants.matches("units/scout", "units/scout"))
        #expect(!Grants.matches("units/scout", "units/scout2"))
        #expect(!Grants.matches("units/*/x", "units/a/x"))
        #expect(!Grants().mayPublish("currency"))
    }

    @Test func aTokenCheckedOnceIsStillRefusedOnceItExpires() async throws {
        let verifier = TokenVerifier(key: try await TokenKey.secret(Self.secret))
        let now = Date()
        let claims = TokenClaims(subject: "ann", expires: now.addingTimeInterval(60), notBefore: now.addingTimeInterval(-60),
                                 grants: Grants(publish: ["*"], subscribe: ["*"]))
        let token = try await TokenIssuer(key: TokenKey.secret(Self.secret)).sign(claims)
        #expect(try verifier.verify(token, at: now).subject == "ann")
        // The second check finds the token among those already checked: its times still count.
        #expect(try verifier.verify(token, at: now.addingTimeInterval(30)).subject == "ann")
        #expect(throws: TokenError.self) { try verifier.verify(token, at: now.addingTimeInterval(61)) }
        #expect(throws: TokenError.self) { try verifier.verify(token, at: now.addingTimeInterval(-61)) }
        // A token that failed once fails again: only good signatures are kept.
        let forged = token.dropLast(2) + "xx"
        #expect(throws: TokenError.self) { try verifier.verify(String(forged), at: now) }
        #expect(throws: TokenError.self) { try verifier.verify(String(forged), at: now) }
    }

    @Test func shortSecretsAndUnreadableKeysAreRefusedAtStart() async {
        await #expect(throws: TokenKeyError.self) { try await TokenKey.secret("short") }
        await #expect(throws: TokenKeyError.self) { try await TokenKey.publicKey(pem: "-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----") }
    }

    /// Any `exp` and `nbf` a validly signed token may carry, every Double included (huge, tiny,
    /// negative, subnormal, infinite, NaN): checking them never traps, an accepted token expires after
    /// now and no later than the end of 9999, and one not yet valid is refused.
    @Test func tokenTimesNeverTrapAndStayWithinWhatHeraldKeeps() {
        var random = Fuzzing.Generator(state: Fuzzing.seed ^ 9)
        let now = Date(timeIntervalSince1970: 1_795_400_000)
        let edges: [Double] = [9_999_999_999_999_999_999, 1e300, .greatestFiniteMagnitude, 253_402_300_800, -1e300, 0, -0.0,
                               .leastNonzeroMagnitude, .infinity, -.infinity, .nan, 1_795_400_000, 1_795_400_000.5]
        for index in 0..<(Fuzzing.iterations / 10 + edges.count * edges.count) {
            let pair = index < edges.count * edges.count
                ? (edges[index / edges.count], edges[index % edges.count])
                : (Double(bitPattern: random.next()), random.next() % 2 == 0 ? Double(bitPattern: random.next()) : .nan)
            let claims = TokenClaims(subject: "ann", expires: Date(timeIntervalSince1970: pair.0),
                                     notBefore: pair.1.isNaN ? nil : Date(timeIntervalSince1970: pair.1), grants: Grants())
            guard let token = try? TokenVerifier.check(claims, at: now) else { continue }
            #expect(token.expires > now && token.expires <= TokenVerifier.latestExpiry, "exp \(pair.0)")
            #expect(!(pair.1 > now.timeIntervalSince1970), "nbf \(pair.1) is later than now, yet accepted")
        }
    }
}
