#if canImport(Glibc)
public import Glibc
#endif
import Synchronization

/// A section of code that one thread at a time may run: a pthread mutex and nothing to guard but
/// the running itself.
///
/// Synchronization's `Mutex` does the same job, but on Linux it waits on a futex that ThreadSanitizer
/// cannot see, so every access under it reads as a race (measured: five reports in one run of the
/// stream tests, all between two accesses under the same `Mutex`). A pthread mutex is what
/// ThreadSanitizer understands, and uncontended it costs the same: one atomic each way.
///
/// Use this, not `Lock<Void>`, when there is no value: an `inout` access to a zero-sized stored
/// property is instrumented at the end of the object, which is another object's memory, and
/// ThreadSanitizer reported it as a "Swift access race" (measured: one report from two threads
/// taking a `Lock(())` in turn).
public final class CriticalSection: @unchecked Sendable {
    // Unchecked: the mutex is the synchronisation itself.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` while no other thread runs this section.
    @inlinable
    public func run<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` if no other thread is in the section now; nil (without waiting) if one is.
    @inlinable
    public func runIfFree<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value that any thread may use, one at a time: each access runs in a `CriticalSection`.
public final class Lock<Value>: @unchecked Sendable {
    // Unchecked: `value` is only reached in `withLock`, inside `section`.
    @usableFromInline let section = CriticalSection()
    /// No dynamic exclusivity check: only `withLock` reaches the value, inside the section, so no
    /// other thread's access can overlap, and a nested `withLock` on the same thread waits on the
    /// mutex before it could reach the value (the check could never fire). Checked, it was one
    /// runtime call and a thread-local look-up per access, on every request's locks (`git show dad6eb7:BENCHMARKS.md`,
    /// "Quick reads").
    @exclusivity(unchecked) @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try section.run { () throws(Failure) -> Result in try body(&value) }
    }

    /// Runs `body` with the value if the lock is free now; nil (without waiting) if another holds it.
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        try section.runIfFree { () throws(Failure) -> Result in try body(&value) }
    }
}

/// A section that many threads may read at once and one thread at a time may write, with no reader
/// inside: a pthread read-write lock (for the reason `CriticalSection` gives, not a futex of its own).
///
/// Herald's use: the writer makes a batch visible (memory takes its changes, then the hub numbers its
/// events) as one write, and a `GET` reads state and the last event id as one read, so the id it
/// answers with is exactly the last event its state reflects.
public final class ReadWriteSection: @unchecked Sendable {
    // Unchecked: the lock is the synchronisation itself.
    @usableFromInline let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Writes begun and ended: odd while one is in progress.
    private let writes = Atomic<UInt64>(0)

    public init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` while no thread writes (others may read meanwhile).
    @inlinable
    public func read<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` while no other thread reads or writes.
    @inlinable
    public func write<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_rwlock_wrlock(lock)
        countWrite()
        defer {
            countWrite()
            pthread_rwlock_unlock(lock)
        }
        return try body()
    }

    /// A write begins or ends (`generation`). Ordered both ways: nothing the write does is seen
    /// before its beginning is, nor its end before anything it did.
    @usableFromInline func countWrite() { writes.add(1, ordering: .sequentiallyConsistent) }

    /// How many writes began and ended, without waiting for the lock: odd while one is in progress,
    /// and the same even number inside every read between two writes. A reader that kept what it
    /// read with the number read inside, and finds the same number now, knows no write began since:
    /// what it kept is what a read would find (`QuickResponses`).
    public var generation: UInt64 { writes.load(ordering: .sequentiallyConsistent) }
}
