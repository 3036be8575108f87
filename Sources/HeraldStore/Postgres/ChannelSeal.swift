import Crypto
import Foundation
import HeraldThreads

/// What proves that a notification on the replicas' channels came from a replica. `LISTEN` and
/// `NOTIFY` need no privilege in PostgreSQL: any role that can log in may read and send on them. So
/// every payload a replica sends carries an HMAC-SHA256 under a key that only Herald's role can read
/// (`herald_channel_key`, made by the first replica), and a replica acts on nothing whose seal does not
/// check out.
///
/// - A commit's news (`herald`) is `MAC:payload`; an old one sent again names a revision already taken
///   in, which is ignored.
/// - A message (`herald_messages`) is `MAC:MILLISECONDS:NONCE:payload`; one older than `freshness`, or
///   whose nonce was already seen, is dropped as a replay.
///
/// The MAC covers the channel's name, so a payload of one channel is no payload of the other.
public final class ChannelSeal: Sendable {
    /// HMAC-SHA256 under the key, with nothing fed yet: each seal starts from a copy (its state is
    /// copied on write), where making one from the key was a third of the seal's cost.
    private let keyed: HMAC<SHA256>
    /// Messages' nonces seen within `freshness`, with when each was sent.
    private let seenNonces = Lock<[String: Int64]>([:])
    private let dropped = Lock<[Drop: Int]>([:])

    /// Why a payload was dropped.
    public enum Drop: String, Sendable, CaseIterable {
        /// No seal, or one that does not check out.
        case forged
        /// A message sent before (its nonce), or too old to tell.
        case replayed
    }

    /// How old a message may be when it arrives (its sender's clock against this one's).
    static let freshness: Int64 = 30_000
    /// What a seal adds to a message at most: the MAC (43), the time (at most 20), the nonce (at most 13), and three `:`.
    public static let messageOverhead = 80

    public init(key: [UInt8]) {
        keyed = HMAC<SHA256>(key: SymmetricKey(data: key))
    }

    /// Payloads dropped, by why.
    public var drops: [Drop: Int] { dropped.withLock { $0 } }

    /// A commit's payload, sealed.
    func sealNews(_ payload: String, channel: String) -> String {
        mac(channel, payload) + ":" + payload
    }

    /// The payload a commit's notification carries, if its seal checks out; nil (counted) otherwise.
    func openNews(_ sealed: String, channel: String) -> String? {
        guard let colon = sealed.firstIndex(of: ":") else { return drop(.forged) }
        let payload = sealed[sealed.index(after: colon)...]
        guard Self.same(sealed[..<colon], mac(channel, payload)) else { return drop(.forged) }
        return String(payload)
    }

    /// A message, sealed with the time and a nonce of its own.
    func sealMessage(_ message: String, channel: String, now: Int64 = ChannelSeal.milliseconds()) -> String {
        var generator = SystemRandomNumberGenerator()
        let body = "\(now):\(String(generator.next() as UInt64, radix: 36)):\(message)"
        return mac(channel, body) + ":" + body
    }

    /// The message a notification carries, if its seal checks out and it was not heard before.
    func openMessage(_ sealed: String, channel: String, now: Int64 = ChannelSeal.milliseconds()) -> String? {
        let fields = sealed.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, Self.same(fields[0], mac(channel, String(sealed[fields[1].startIndex...]))),
              let sent = Int64(fields[1]) else { return drop(.forged) }
        let nonce = String(fields[2])
        guard abs(now - sent) <= Self.freshness else { return drop(.replayed) }
        let fresh = seenNonces.withLock { seen -> Bool in
            if seen.count > 10_000 { seen = seen.filter { now - $0.value <= Self.freshness } }
            return seen.updateValue(sent, forKey: nonce) == nil
        }
        guard fresh else { return drop(.replayed) }
        return String(fields[3])
    }

    private func drop(_ reason: Drop) -> String? {
        dropped.withLock { $0[reason, default: 0] += 1 }
        return nil
    }

    private func mac(_ channel: String, _ body: some StringProtocol) -> String {
        // Of the channel's name, a newline and the body, fed as they are (a news part is 7,700 bytes).
        var hmac = keyed
        hmac.update(data: Array(channel.utf8) + [0x0A])
        if body.utf8.withContiguousStorageIfAvailable({ hmac.update(data: UnsafeRawBufferPointer($0)) }) == nil {
            hmac.update(data: Array(body.utf8))
        }
        let code = hmac.finalize()
        // base64url without padding (RFC 4648 §5), mapped byte by byte: Foundation's
        // `replacingOccurrences` took 5 % of the CPU of a replica taking in changes.
        let base64 = Data(code).base64EncodedData()
        return String(decoding: base64.compactMap { byte -> UInt8? in
            switch byte {
            case UInt8(ascii: "+"): UInt8(ascii: "-")
            case UInt8(ascii: "/"): UInt8(ascii: "_")
            case UInt8(ascii: "="): nil
            default: byte
            }
        }, as: UTF8.self)
    }

    /// Compares two MACs in time that does not depend on where they differ.
    private static func same(_ given: Substring, _ expected: String) -> Bool {
        let (a, b) = (Array(given.utf8), Array(expected.utf8))
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    static func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000) }

    /// A new random key (32 bytes), as hex.
    static func newKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// A key's bytes from its hex; nil when it does not read.
    static func key(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
