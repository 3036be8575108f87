/// What happened in the domain, in domain values. Whoever stores and publishes it (Herald's journal)
/// decides what that looks like on the wire and on the disk.
public enum DomainEvent: Sendable {
    /// An auction was opened: its collection's observers see it enter.
    case auctionOpened(Auction)
    /// A bid was accepted; `auction` is the auction after it.
    case bidPlaced(Bid, auction: Auction)
    /// A running countdown passed a whole second. News of the moment: published, never stored or replayed.
    case countdownTicked(Auction, remainingSeconds: Int)
    /// The countdown reached zero and the last bidder won.
    case auctionClosed(Auction)
    /// A keyed record (a unit) was created (no `previous`) or replaced; `previous` is of the same kind.
    case recordSaved(any KeyedRecord, previous: (any KeyedRecord)?)
    /// A keyed record was removed; this is what it was.
    case recordRemoved(any KeyedRecord)
    /// The default currency changed from `previous`.
    case currencyChanged(Currency, previous: Currency)
    /// A trip was added: its collection's observers see it enter.
    case tripAdded(Trip)
    /// A trip's actual departure moved; `changed` names the fields whose values differ.
    case tripMoved(Trip, changed: [Trip.Field])

    /// Whether the event is kept: stored, numbered and replayable. Only a tick is not.
    public var isDurable: Bool {
        if case .countdownTicked = self { return false }
        return true
    }
}
