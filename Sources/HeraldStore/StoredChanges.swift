/// What other Heralds changed since this one last looked at a shared store: the records and auctions
/// as they are now (`changed`'s sequence and events are not read), and the records removed.
public struct StoredChanges: Sendable {
    public var changed = StoredState()
    public var removed: [(kind: String, id: String)] = []

    public init() {}
}
