/// Who a request comes from: the peer's address, or behind a trusted proxy the address that proxy
/// saw. `X-Forwarded-For` is read right to left, past every trusted proxy, and the first address that
/// is not one is the client (a client can prepend anything, but not what the proxies append).
public struct ClientResolver: Sendable {
    public let trustedProxies: [AddressRange]

    public init(trustedProxies: [AddressRange]) { self.trustedProxies = trustedProxies }

    public func isTrusted(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// - Parameter forwardedFor: every `X-Forwarded-For` value, in order.
    public func client(peer: String, forwardedFor: [String]) -> String {
        guard !trustedProxies.isEmpty, isTrusted(peer), !forwardedFor.isEmpty else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpacesAndTabs }
        var client = peer
        for hop in hops.reversed() {
            guard AddressRange.bytes(of: hop) != nil else { return client }
            client = hop
            if !isTrusted(hop) { return hop }
        }
        return client
    }
}
