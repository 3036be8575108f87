import Foundation
@testable import HeraldAuth
import Testing

/// Several keys told apart by `kid` (a JWK Set), and keys replaced while Herald runs.
@Suite struct KeySetTests {
    static let old = "herald-old-secret-0123456789abcdef!"
    static let new = "herald-new-secret-0123456789abcdef!"

    /// A JWK Set of HS256 keys, each `(kid, secret)`.
    static func set(_ keys: [(String?, String)]) -> String {
        let entries = keys.map { kid, secret in
            let k = Data(secret.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return #"{"kty":"oct","alg":"HS256","k":"\#(k)""# + (kid.map { #","kid":"\#($0)""# } ?? "") + "}"
        }
        return #"{"keys":[\#(entries.joined(separator: ","))]}"#
    }

    static func claims(_ subject: String) -> TokenClaims {
        TokenClaims(subject: subject, expires: Date().addingTimeInterval(600), grants: Grants(subscribe: ["*"]))
    }

    @Test func aTokenIsCheckedWithTheKeyItsKidNames() async throws {
        let keys = try await TokenKey.keySet(json: Self.set([("2026-10", Self.old), ("2026-11", Self.new)]))
        #expect(keys.kids == ["2026-10", "2026-11"] && keys.name == "HS256")
        let verifier = TokenVerifier(key: keys)
        for kid in ["2026-10", "2026-11"] {
            let token = try await TokenIssuer(key: keys, kid: kid).sign(Self.claims(kid))
            #expect(try verifier.verify(token).subject == kid)
        }
        // Signed with one key's secret, but naming the other: the other's signature does not match.
        let mislabelled = try await TokenIssuer(key: TokenKey.secret(Self.old, kid: "2026-11")).sign(Self.claims("eve"))
        #expect(throws: TokenError.self) { try verifier.verify(mislabelled) }
        // No kid, with several keys: which one is not guessed.
        let unnamed = try await TokenIssuer(key: TokenKey.secret(Self.old)).sign(Self.claims("ann"))
        #expect { try verifier.verify(unnamed) } throws: { ($0 as? TokenError)?.description.contains("names no key") == true }
        let unknown = try await TokenIssuer(key: TokenKey.secret(Self.old, kid: "2025")).sign(Self.claims("ann"))
        #expect { try verifier.verify(unknown) } throws: { ($0 as? TokenError)?.description.contains("'2025'") == true }
        // One key without an id takes a token whatever its kid, as before key sets.
        let single = TokenVerifier(key: try await TokenKey.keySet(json: Self.set([(nil, Self.old)])))
        #expect(try single.verify(unnamed).subject == "ann" && single.verify(unknown).subject == "ann")
    }

    @Test func aReloadReplacesTheKeysAndForgetsTokensCheckedWithTheOldOnes() async throws {
        let verifier = TokenVerifier(key: try await TokenKey.keySet(json: Self.set([("a", Self.old)])))
        let old = try await TokenIssuer(key: TokenKey.secret(Self.old, kid: "a")).sign(Self.claims("ann"))
        let new = try await TokenIssuer(key: TokenKey.secret(Self.new, kid: "b")).sign(Self.claims("bob"))
        #expect(try verifier.verify(old).subject == "ann")
        #expect(throws: TokenError.self) { try verifier.verify(new) }
        verifier.reload(try await TokenKey.keySet(json: Self.set([("b", Self.new)])))
        #expect(try verifier.verify(new).subject == "bob")
        // Checked before, and kept among the checked tokens: still refused once its key is gone.
        #expect(throws: TokenError.self) { try verifier.verify(old) }
    }

    @Test func keySetsThatCannotBeUsedSayWhy() async {
        let cases: [(String, String)] = [
            ("not json", "not JSON"),
            (#"{"keys":[]}"#, "no \"keys\""),
            (Self.set([("a", Self.old), (nil, Self.new)]), "has no kid"),
            (Self.set([("a", Self.old), ("a", Self.new)]), "two keys"),
            (Self.set([("a", "short-secret")]), "at least 32 bytes"),
            (#"{"keys":[{"kty":"oct","kid":"a","k":"***"}]}"#, "base64url"),
            (#"{"keys":[{"kty":"OKP","kid":"a","crv":"Ed25519","x":"AA"}]}"#, "kty 'OKP'"),
            (#"{"keys":[{"kty":"oct","kid":"a","alg":"RS256","k":"\#(String(repeating: "A", count: 44))"}]}"#, "alg RS256"),
            (#"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#, "needs a kid"),
            (Self.set((0...TokenKey.maximumKeys).map { ("k\($0)", Self.old) }), "at most \(TokenKey.maximumKeys)"),
            (#"{"keys":[""# + String(repeating: " ", count: TokenKey.maximumFileBytes) + "]}", "longer than"),
        ]
        for (text, reason) in cases {
            await #expect { try await TokenKey.keySet(json: text) } throws: { error in
                (error as? TokenKeyError)?.description.contains(reason) == true
            }
        }
    }

    @Test func aKeyFileIsASetWhenItStartsWithABrace() async throws {
        let set = try await TokenKey.file(" \n" + Self.set([("a", Self.old)])) { text throws(TokenKeyError) in try await TokenKey.secret(text) }
        #expect(set.kids == ["a"])
        let secret = try await TokenKey.file(Self.old) { text throws(TokenKeyError) in try await TokenKey.secret(text) }
        #expect(secret.kids.isEmpty && secret.name == "HS256")
    }
}
