import ArgumentParser
import Foundation
import HeraldAuth

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
    var key: String? = ProcessInfo.processInfo.environment["HERALD_JWT_KEY"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(help: "File holding the HS256 secret (env HERALD_JWT_KEY_FILE).")
    var keyFile: String? = ProcessInfo.processInfo.environment["HERALD_JWT_KEY_FILE"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(help: "PEM private key (EC P-256 for ES256, or RSA for RS256) whose public key the server was given.")
    var privateKeyFile: String?

    @Option(help: "The user (sub): who bids with this token.")
    var sub: String?

    @Option(parsing: .singleValue, help: "A topic pattern the token may change (repeat for more).")
    var publish: [String] = []

    @Option(parsing: .singleValue, help: "A topic pattern the token may watch (repeat for more).")
    var subscribe: [String] = []

    @Option(help: "How long the token is valid: 90s, 15m, 1h, 7d, or seconds.")
    var ttl: String = "1h"

    func validate() throws {
        guard [key, keyFile, privateKeyFile].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --key, --key-file and --private-key-file")
        }
        guard Self.seconds(ttl) != nil else { throw ValidationError("--ttl must be a number of seconds, or one with s, m, h or d (90s, 15m, 1h, 7d)") }
        guard publish.count + subscribe.count > 0 else { throw ValidationError("name at least one --publish or --subscribe pattern") }
    }

    func run() throws {
        let signingKey: TokenKey
        do {
            if let key {
                signingKey = try TokenKey.secret(key)
            } else if let keyFile {
                signingKey = try TokenKey.secret(try HeraldServe.read(keyFile, trimmingNewline: true))
            } else if let privateKeyFile {
                signingKey = try TokenKey.privateKey(pem: try HeraldServe.read(privateKeyFile, trimmingNewline: false))
            } else {
                throw ValidationError("give one of --key, --key-file and --private-key-file")
            }
        } catch let error as TokenKeyError {
            throw ValidationError(error.description)
        }
        let expires = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + Double(Self.seconds(ttl) ?? 3600)).rounded(.down))
        let claims = TokenClaims(subject: sub, expires: expires,
                                 grants: Grants(publish: publish, subscribe: subscribe))
        print(try TokenIssuer(key: signingKey).sign(claims))
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
