import ArgumentParser
import Foundation
import HeraldAuth
import HeraldServer
import Logging

// The token keys `herald serve` is given: read at start, and again at `SIGHUP`.
extension HeraldServe {
    /// The keys from `--jwt-key`, `--jwt-key-file` or `--jwt-public-key-file` (a file may hold a JWK
    /// Set); nil when none is given. Read again at `SIGHUP`.
    func tokenKey() throws -> TokenKey? {
        if let jwtKey { return try waitFor { try await TokenKey.secret(jwtKey) } }
        if let jwtKeyFile {
            let text = try Self.read(jwtKeyFile, trimmingNewline: true)
            return try waitFor { try await TokenKey.file(text) { text throws(TokenKeyError) in try await TokenKey.secret(text) } }
        }
        if let jwtPublicKeyFile {
            let text = try Self.read(jwtPublicKeyFile, trimmingNewline: false)
            return try waitFor { try await TokenKey.file(text) { text throws(TokenKeyError) in try await TokenKey.publicKey(pem: text) } }
        }
        return nil
    }

    /// `SIGHUP`: the key file read again. A file that does not read keeps the keys Herald has.
    func reloadKeys(_ herald: Herald, logger: Logger) {
        guard jwtKeyFile != nil || jwtPublicKeyFile != nil else {
            logger.notice("SIGHUP: no key file to read again (the key was given on the command line or in the environment)")
            return
        }
        do {
            guard let key = try tokenKey() else { return }
            if herald.reloadTokenKey(key) {
                logger.notice("SIGHUP: token keys read again", metadata: ["auth.algorithm": "\(key.name)", "auth.kids": "\(key.kids.joined(separator: ","))"])
            } else {
                logger.error("SIGHUP: Herald was started without a token key; a key cannot be added by a reload")
            }
        } catch {
            logger.error("SIGHUP: the key file does not read; the keys Herald has are kept", metadata: ["error": "\(error)"])
        }
    }

    /// A key file's text; a secret's one trailing newline (as `echo` writes it) is not part of it. At
    /// most `TokenKey.maximumFileBytes` are read: a larger file (a wrong path, `/dev/zero`) is refused
    /// without being read whole, at start and at a reload.
    static func read(_ path: String, trimmingNewline: Bool) throws -> String {
        guard let file = FileHandle(forReadingAtPath: path) else { throw ValidationError("cannot read the key file '\(path)'") }
        defer { try? file.close() }
        let data: Data
        do {
            data = try file.read(upToCount: TokenKey.maximumFileBytes + 1) ?? Data()
        } catch {
            throw ValidationError("cannot read the key file '\(path)': \(error.localizedDescription)")
        }
        guard data.count <= TokenKey.maximumFileBytes else {
            throw ValidationError("the key file '\(path)' is longer than \(TokenKey.maximumFileBytes) bytes: it is no key")
        }
        var text = String(decoding: data, as: UTF8.self)
        if trimmingNewline, text.hasSuffix("\n") { text.removeLast() }
        if trimmingNewline, text.hasSuffix("\r") { text.removeLast() }
        return text
    }
}
