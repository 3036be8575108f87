import Foundation
import HeraldAuth
import JWTKit
import Glibc
import HeraldTestSupport
import Testing

/// Token keys rotated while Herald runs: the key file read again at `SIGHUP`, under open streams.
@Suite struct KeyRotationTests {
    static let old = "rotation-old-secret-0123456789abcdef"
    static let new = "rotation-new-secret-0123456789abcdef"

    /// A JWK Set of HS256 keys, each `(kid, secret)`.
    static func set(_ keys: [(String, String)]) -> String {
        let entries = keys.map { kid, secret in
            let k = Data(secret.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return #"{"kty":"oct","kid":"\#(kid)","k":"\#(k)"}"#
        }
        return #"{"keys":[\#(entries.joined(separator: ","))]}"#
    }

    /// What `herald token --key-file FILE --kid KID` prints.
    static func token(_ file: String, kid: String) throws -> String {
        let process = Process(), output = Pipe()
        process.executableURL = heraldExecutable()
        process.arguments = ["token", "--key-file", file, "--kid", kid, "--sub", "ann", "--publish", "*", "--subscribe", "*", "--ttl", "1h"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let token = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestError("herald token --kid \(kid) failed") }
        return token
    }

    /// 1,000 streams opened with a token of the old key; the key file changes to the new key alone and
    /// Herald reads it at SIGHUP. No stream drops; each is renewed with a token of the new key; a token
    /// of the removed key is refused; the next bid reaches every stream. A broken file then keeps the
    /// keys Herald has.
    @Test func keysRotateAtSighupUnderOpenStreamsWithNothingLost() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/keys.json"
        try Self.set([("old", Self.old)]).write(toFile: file, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(arguments: ["--jwt-key-file", file] + HeraldProcess.unlimited)
        let client = HTTPClient(port: herald.port)
        let old = try Self.token(file, kid: "old")
        let fleet = try SSEFleet(port: herald.port, path: "/auctions/1/events?access_token=\(old)", count: 1000)
        defer { fleet.close() }
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.contains { $0.event == "snapshot" } } }, "every stream opened")
        let ids = fleet.events.compactMap { events in events.first { $0.event == "stream" }.flatMap { $0.json["stream"] as? String } }
        #expect(ids.count == 1000)

        try Self.set([("new", Self.new)]).write(toFile: file, atomically: true, encoding: .utf8)
        let new = try Self.token(file, kid: "new")
        kill(herald.process.processIdentifier, SIGHUP)
        #expect(eventually { (try? client.get("/subjects", headers: [("Authorization", "Bearer \(new)")]).status) == 200 }, "the new key is read")
        #expect(herald.log.text.contains("token keys read again"))
        let refused = try client.get("/subjects", headers: [("Authorization", "Bearer \(old)")])
        #expect(refused.status == 401 && refused.text.contains("'old'"), "the removed key's token: \(refused.text)")
        #expect(fleet.closedCount == 0, "no stream dropped")

        for id in ids {
            let renewed = try client.request("POST", "/streams/\(id)/token", headers: [("Authorization", "Bearer \(new)")])
            #expect(renewed.status == 204, "\(id): \(renewed.text)")
        }
        #expect(try client.request("POST", "/streams/\(ids[0])/token", headers: [("Authorization", "Bearer \(old)")]).status == 401)
        let bid = try client.request("POST", "/auctions/1/bids", json: #"{"bidder":"ann","amount":500}"#, headers: [("Authorization", "Bearer \(new)")])
        #expect(bid.status == 201)
        #expect(fleet.pump(timeout: 60) { $0.events.allSatisfy { $0.contains { $0.event == "bid" } } }, "every stream got the bid")
        #expect(fleet.closedCount == 0)

        try "{ not a key set".write(toFile: file, atomically: true, encoding: .utf8)
        kill(herald.process.processIdentifier, SIGHUP)
        #expect(eventually { herald.log.text.contains("the keys Herald has are kept") })
        #expect(try client.get("/subjects", headers: [("Authorization", "Bearer \(new)")]).status == 200)
    }

    /// `herald token` with a key set names its key, and a set with several needs `--kid`.
    @Test func heraldTokenSignsWithTheKeyItNames() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/keys.json"
        try Self.set([("a", Self.old), ("b", Self.new)]).write(toFile: file, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(arguments: ["--jwt-key-file", file])
        let client = HTTPClient(port: herald.port)
        for kid in ["a", "b"] {
            #expect(try client.get("/subjects", headers: [("Authorization", "Bearer \(Self.token(file, kid: kid))")]).status == 200, "\(kid)")
        }
        #expect(throws: TestError.self) { try Self.token(file, kid: "c") }
        let unnamed = Process()
        unnamed.executableURL = heraldExecutable()
        unnamed.arguments = ["token", "--key-file", file, "--sub", "ann", "--subscribe", "*"]
        unnamed.standardOutput = FileHandle.nullDevice
        unnamed.standardError = FileHandle.nullDevice
        try unnamed.run()
        unnamed.waitUntilExit()
        #expect(unnamed.terminationStatus == 64, "a set of two keys and no --kid")
    }
}

/// An ES256 key in a JWK Set, as an identity provider publishes its keys: a token signed with the
/// private key and naming the key's kid is taken; one naming another kid is not.
@Suite struct PublicKeySetTests {
    @Test func anECKeyOfASetChecksTokensThatNameIt() async throws {
        let privateKey = ES256PrivateKey()
        let point = try #require(privateKey.parameters)
        let set = #"{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"idp-1","x":"\#(point.x)","y":"\#(point.y)"}]}"#
        let verifier = TokenVerifier(key: try await TokenKey.keySet(json: set))
        let claims = TokenClaims(subject: "ann", expires: Date().addingTimeInterval(600), grants: Grants(subscribe: ["*"]))
        let signed = try await TokenIssuer(key: TokenKey.privateKey(pem: privateKey.pemRepresentation, kid: "idp-1"), kid: "idp-1").sign(claims)
        #expect(try verifier.verify(signed).subject == "ann")
        let other = try await TokenIssuer(key: TokenKey.privateKey(pem: privateKey.pemRepresentation, kid: "idp-2"), kid: "idp-2").sign(claims)
        #expect(throws: TokenError.self) { try verifier.verify(other) }
        let stranger = try await TokenIssuer(key: TokenKey.privateKey(pem: ES256PrivateKey().pemRepresentation, kid: "idp-1"), kid: "idp-1").sign(claims)
        #expect(throws: TokenError.self) { try verifier.verify(stranger) }
    }
}
