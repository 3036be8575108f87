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

/// A subject's current state, as restored at start.
public enum DomainState: Sendable {
    case auction(Auction)
    case unit(Unit)
    case trip(Trip)
    case currency(Currency)
}

/// Stores and publishes every change, in order. The domain changes its memory only after `publish`
/// returns: a change that could not be stored (`DomainError.unavailable`) never happened.
///
/// Changes are made one at a time, where the sink runs them (Herald's writer thread, `perform`). So a
/// change reads the state under the domain's lock, calls `publish` without holding it, and writes the
/// new state back under it: nothing else changes the state in between, and a reader never waits for
/// the disk.
public protocol ChangeSink: Sendable {
    func publish(_ event: DomainEvent) throws(DomainError)
    /// Sets current values without an event or a record (restoring at start).
    func seed(_ states: [DomainState])
    /// Runs `work` where changes are made, after every change asked for before it, and returns once it
    /// ran and its changes are published. A timer that changes state fires through it, holding no lock.
    func perform(_ work: @escaping @Sendable () -> Void)
}
