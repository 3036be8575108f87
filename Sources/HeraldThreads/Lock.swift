#if canImport(Glibc)
public import Glibc
#endif

/// A value that any thread may use, one at a time: each access holds a pthread mutex.
///
/// Synchronization's `Mutex` does the same job, but on Linux it waits on a futex that ThreadSanitizer
/// cannot see, so every access under it reads as a race (measured: five reports in one run of the
/// stream tests, all between two accesses under the same `Mutex`). A pthread mutex is what
/// ThreadSanitizer understands, and uncontended it costs the same: one atomic each way.
public final class Lock<Value>: @unchecked Sendable {
    // Unchecked: `value` is only reached in `withLock`, under `mutex`.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value if the lock is free now; nil (without waiting) if another holds it.
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
