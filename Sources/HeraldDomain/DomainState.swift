/// A subject's current state, as restored at start.
public enum DomainState: Sendable {
    case auction(Auction)
    case unit(Unit)
    /// A unit that is no more: observers' current value goes.
    case unitRemoved(id: String)
    case trip(Trip)
    case currency(Currency)
}
