/// Where a new observer starts.
public enum ResumePoint: Sendable, Equatable {
    /// Current state first (`snapshot` events, unless `snapshot` is false), then live events.
    case now(snapshot: Bool)
    /// Exactly the events after this id, then live; a `resync` and snapshots if they are no longer kept.
    case after(UInt64)
    /// A last-event id that could not be understood: `resync` and snapshots.
    case unknown
}

/// Why an observer stopped receiving events.
public enum ObserverEnd: Sendable, Equatable {
    /// Its queue was full: it fell too far behind and must reconnect.
    case overflowed
    /// It was cancelled, or the hub shut down.
    case cancelled
}
