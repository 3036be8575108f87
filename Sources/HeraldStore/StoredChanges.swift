/// What other Heralds changed since this one last looked at a shared store: the records and auctions
/// as they are now (`changed`'s sequence and events are not read), and the records removed. Each
/// changed auction holds only the bids that were missed, with its `bidCount`: the bids memory knows
/// come first.
public struct StoredChanges: Sendable {
    public var changed = StoredState()
    public var removed: [(kind: String, id: String)] = []

    public init() {}
}
