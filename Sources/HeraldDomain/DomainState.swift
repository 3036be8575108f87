/// A subject's current state, as restored at start.
public enum DomainState: Sendable {
    case auction(Auction)
    /// A keyed record (a unit).
    case record(any KeyedRecord)
    /// A keyed record that is no more: observers' current value goes.
    case recordRemoved(collection: String, id: String)
    case trip(Trip)
    case currency(Currency)
}
