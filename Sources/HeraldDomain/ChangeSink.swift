
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
