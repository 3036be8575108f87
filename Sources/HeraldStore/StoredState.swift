/// What a store holds at start.
public struct StoredState: Sendable {
    /// The last sequence number ever given out (never reused, even when its event is pruned).
    public var lastSequence: UInt64 = 0
    /// The newest events, oldest first.
    public var events: [StoredEvent] = []
    /// Records by kind, each by id.
    public var records: [String: [(id: String, document: [UInt8])]] = [:]
    /// Every auction with its bids, by id order.
    public var auctions: [StoredAuction] = []

    public init() {}
}
