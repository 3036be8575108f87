/// Stores and publishes every change, in order. The domain's memory takes a change only once the
/// sink says it is durable (`whenBatchEnds`): a reader never sees a change that is not stored, and a
/// change that could not be stored never happened.
///
/// Changes are made one at a time, where the sink runs them (Herald's writer thread, `perform`). A
/// change reads the state under the domain's lock (its own batch's staged changes first), calls
/// `publish` without holding it, and stages the new state under it; nothing else changes the state in
/// between, and a reader never waits for the disk.
public protocol ChangeSink: Sendable {
    /// Stores and publishes `event`, in the change's batch.
    func publish(_ event: DomainEvent, in batch: ChangeBatch) throws(DomainError)
    /// Sets current values without an event or a record (restoring at start).
    func seed(_ states: [DomainState])
    /// Runs `work` where changes are made, after every change asked for before it. It may return
    /// before `work` ran (Herald's writer queues it): a timer that changes state fires through it,
    /// holding no lock, and its thread moves on to the next timer instead of waiting for a batch.
    func perform(_ work: @escaping @Sendable (ChangeBatch) -> Void)
    /// Calls `end` once the batch that holds the change being made ends: with true once it is durable
    /// (before its events are published), with false when it was lost (its changes never happened).
    /// Where changes are not batched, at once with true.
    func whenBatchEnds(in batch: ChangeBatch, _ end: @escaping @Sendable (_ durable: Bool) -> Void)
}

extension ChangeSink {
    /// Unbatched: every change is durable once `publish` returns.
    public func whenBatchEnds(in batch: ChangeBatch, _ end: @escaping @Sendable (_ durable: Bool) -> Void) { end(true) }
}

/// The batch a change runs in, handed to the change where changes are made (Herald's writer: each
/// batch's changes, `ChangeSink.perform`, what runs between batches), as GRDB hands `db` to
/// `write { db in … }`. Every method that changes state asks for it, so a change is written to run
/// on the writer or not at all: it is not `Sendable`, so a `@Sendable` closure cannot take it to
/// another thread, and only the package makes one (the writer, and the tests' sinks).
public struct ChangeBatch {
    package init() {}
}

@available(*, unavailable)
extension ChangeBatch: Sendable {}

/// What a batch of changes staged and its store has not yet committed: the changes themselves read
/// through it (`value(of:over:)`), readers see only the committed values. `nil` stages a removal.
struct Staged<Key: Hashable, Value> {
    private(set) var values: [Key: Value?] = [:]
    /// The keys in the order they were first staged.
    private(set) var order: [Key] = []
    /// The next number to give a new member, once the batch gave one.
    private(set) var next: Int?

    var isEmpty: Bool { order.isEmpty }

    /// The value a change sees: the staged one if any, else the committed one.
    func value(of key: Key, over committed: [Key: Value]) -> Value? {
        if let staged = values[key] { return staged }
        return committed[key]
    }

    /// Stages `value` (and the next number, for a new member); returns whether it is the batch's
    /// first, which asks to hear when the batch ends (`ChangeSink.whenBatchEnds`).
    mutating func stage(_ value: Value?, for key: Key, next: Int? = nil) -> Bool {
        let first = isEmpty
        if values.updateValue(value, forKey: key) == nil { order.append(key) }
        if let next { self.next = next }
        return first
    }

    /// Everything staged, in first-staged order, and the next number; nothing is left.
    mutating func take() -> (values: [(key: Key, value: Value?)], next: Int?) {
        defer { self = Staged() }
        return (order.map { ($0, values[$0] ?? nil) }, next)
    }
}
