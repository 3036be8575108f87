/// What happened in the domain, in domain values. Whoever stores and publishes it (Herald's journal)
/// decides what that looks like on the wire and on the disk.
public enum DomainEvent: Sendable {
    /// An auction was opened. Observers are not told: they see it in the auction's current value.
    case auctionOpened(Auction)
    /// A bid was accepted; `auction` is the auction after it.
    case bidPlaced(Bid, auction: Auction)
    /// A running countdown passed a whole second. News of the moment: published, never stored or replayed.
    case countdownTicked(Auction, remainingSeconds: Int)
    /// The countdown reached zero and the last bidder won.
    case auctionClosed(Auction)
    /// A unit was created (`created`) or replaced.
    case unitSaved(Unit, created: Bool)
    case unitRemoved(id: String)
    /// The default currency changed from `previous`.
    case currencyChanged(Currency, previous: Currency)
    /// A trip was added. Observers are not told: they see it in the trip's current value.
    case tripAdded(Trip)
    /// A trip's actual departure moved; `changed` names the fields whose values differ.
    case tripMoved(Trip, changed: [Trip.Field])

    /// Whether the event is kept: stored, numbered and replayable. Only a tick is not.
    public var isDurable: Bool {
        if case .countdownTicked = self { return false }
        return true
    }
}
