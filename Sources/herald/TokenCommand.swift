import HeraldThreads
import ArgumentParser
import Foundation
import HeraldAuth
import Synchronization

/// `herald token`: prints a signed token, for curl users, scripts and tests.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Prints a signed token (JWT) for Herald.",
        discussion: """
            Example: herald token --key-file secret --sub ann --publish 'auctions/*' --subscribe '*' --ttl 1h
            A pattern is a topic (currency, units, auctions/7, units/scout, notifications/door) or ends in * \
            and then matches every topic that starts with what comes before it (auctions/*, notifications/door.*, *).
            """)

    @Option(help: "The HS256 secret the server was given (env HERALD_JWT_KEY).")
    var key: String?

    @Option(help: "File holding the HS256 secret, or a JWK Set of keys (env HERALD_JWT_KEY_FILE).")
    var keyFile: String?

    @Option(help: "PEM private key (EC P-256 for ES256, or RSA for RS256) whose public key the server was given, or a JWK Set of private keys.")
    var privateKeyFile: String?

    @Option(help: "The id (kid) of the key to sign with: one of a key set's (required when it has several), or the id the server gave this key.")
    var kid: String?

    @Option(help: "The user (sub): who bids with this token.")
    var sub: String?

    @Option(parsing: .singleValue, help: "A topic pattern the token may change (repeat for more).")
    var publish: [String] = []

    @Option(parsing: .singleValue, help: "A topic pattern the token may watch (repeat for more).")
    var subscribe: [String] = []

    @Flag(help: "An administrator's token: it may list the open streams (GET /streams) and end one (DELETE /streams/{id}).")
    var admin = false

    @Option(help: "How long the token is valid, from 1 second to 366 days: 90s, 15m, 1h, 7d, or seconds.")
    var ttl: String = "1h"

    @Option(help: "The token's id (jti), which an administrator may revoke alone (POST /revocations); by default a random one.")
    var jti: String?

    /// A key named on the command line wins; else the server's own variables name it. (An optional
    /// option with a default is deprecated in swift-argument-parser: the environment is read here.)
    mutating func validate() throws {
        if key == nil, keyFile == nil, privateKeyFile == nil {
            key = Environment.string("HERALD_JWT_KEY")
            keyFile = Environment.string("HERALD_JWT_KEY_FILE")
        }
        guard [key, keyFile, privateKeyFile].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --key, --key-file and --private-key-file")
        }
        guard Self.seconds(ttl) != nil else {
            throw ValidationError("--ttl must be from 1 second to 366 days, written as seconds or with s, m, h or d (90s, 15m, 1h, 7d, 366d), "
                                  + "not '\(ttl)'")
        }
        guard publish.count + subscribe.count > 0 || admin else { throw ValidationError("name at least one --publish or --subscribe pattern, or --admin") }
        if let jti, jti.isEmpty || jti.utf8.count > 200 { throw ValidationError("--jti must be 1 to 200 characters") }
    }

    func run() throws {
        let signingKey: TokenKey
        do {
            let kid = kid
            if let key {
                signingKey = try waitFor { try await TokenKey.secret(key, kid: kid) }
            } else if let keyFile {
                let text = try HeraldServe.read(keyFile, trimmingNewline: true)
                signingKey = try waitFor { try await TokenKey.file(text) { text throws(TokenKeyError) in try await TokenKey.secret(text, kid: kid) } }
            } else if let privateKeyFile {
                let text = try HeraldServe.read(privateKeyFile, trimmingNewline: false)
                signingKey = try waitFor { try await TokenKey.file(text) { text throws(TokenKeyError) in try await TokenKey.privateKey(pem: text, kid: kid) } }
            } else {
                throw ValidationError("give one of --key, --key-file and --private-key-file")
            }
        } catch let error as TokenKeyError {
            throw ValidationError(error.description)
        }
        // `iat`: when it was issued, which a revocation by time or by user compares.
        let issued = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let expires = issued.addingTimeInterval(Double(Self.seconds(ttl) ?? 3600))
        var generator = SystemRandomNumberGenerator()
        let id = jti ?? (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined()
        let claims = TokenClaims(subject: sub, expires: expires, issuedAt: issued, id: id,
                                 grants: Grants(publish: publish, subscribe: subscribe, admin: admin))
        let kid = kid
        do {
            print(try waitFor { try await TokenIssuer(key: signingKey, kid: kid).sign(claims) })
        } catch let error as TokenKeyError {
            throw ValidationError(error.description)
        }
    }

    /// `90`, `90s`, `15m`, `1h`, `7d` as seconds; nil for anything else, zero or more than a year.
    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let (digits, unit) = text.last.flatMap { units[$0] }.map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count <= 9,
              let value = Int(digits), value > 0, value * unit <= 366 * 86_400 else { return nil }
        return value * unit
    }
}

/// Runs async work to its end from the main thread of a command, which is not one of Swift's
/// concurrency threads: those stay free to run the work. Never call it from a task.
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Lock<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    guard let outcome = result.withLock({ $0 }) else { throw ValidationError("the work ended without a result") }
    return try outcome.get()
}
