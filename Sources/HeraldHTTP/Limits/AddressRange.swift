import Foundation

/// An IP address range in CIDR notation (`10.0.0.0/8`, `::1/128`, or an address alone): which peers
/// are proxies whose `X-Forwarded-For` Herald believes.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The address as 16 bytes (IPv4 as IPv4-mapped IPv6), and how many leading bits must match.
    private let bytes: [UInt8]
    private let prefix: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = parts.first.flatMap({ Self.bytes(of: String($0)) }) else { return nil }
        let isV4 = !parts[0].contains(":")
        let maximum = isV4 ? 32 : 128
        var prefix = maximum
        if parts.count == 2 {
            guard parts[1].isASCIIDigits, let bits = Int(parts[1]), bits <= maximum else { return nil }
            prefix = bits
        }
        self.bytes = address
        self.prefix = isV4 ? prefix + 96 : prefix
        description = text
    }

    /// Whether `address` (as text) lies in the range; false when it is not an address.
    public func contains(_ address: String) -> Bool {
        guard let other = Self.bytes(of: address) else { return false }
        var bits = prefix
        for index in 0..<16 where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if bytes[index] & mask != other[index] & mask { return false }
            bits -= 8
        }
        return true
    }

    /// 16 bytes for an IPv4 or IPv6 address, nil for anything else.
    static func bytes(of text: String) -> [UInt8]? {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) }
        }
        return nil
    }
}
