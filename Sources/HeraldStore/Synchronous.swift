/// How hard a commit insists on the disk.
public enum Synchronous: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: a commit survives the process crashing; a power cut may lose the
    /// last commits (never corrupts).
    case normal
    /// Every commit is on the disk before it is acknowledged: the write-ahead log is synced once for
    /// each batch of commits (group commit), as `synchronous=FULL` would sync it for each.
    case full
}
