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

/// A value that any thread may use, one at a time: each access holds a pthread mutex, as a
/// `CriticalSection` does. The value and its mutex are one allocation (`LockStorage`): a lock made of
/// a class, its section and the section's mutex was three, 80 bytes more for each of them, one of them
/// every stream's observer.
///
/// A closure kept in a lock is kept in a struct (`struct Job { let run: … }`): Swift 6.3 wraps a bare
/// closure (or a tuple of them) kept in a `Lock` (or a `Mutex`) in one more reabstraction thunk each
/// time `withLock { $0 }` reads it, so every call costs more than the last and the chain of thunks
/// finally overflows the stack; a closure inside a struct is kept as it is.
public struct Lock<Value>: @unchecked Sendable {
    // Unchecked: the value is only reached in `withLock`, holding the mutex.
    @usableFromInline let storage: LockStorage<Value>

    public init(_ value: Value) {
        storage = LockStorage.make(value)
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withUnsafeMutablePointers { (value, mutex) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }

    /// Runs `body` with the value if the lock is free now; nil (without waiting) if another holds it.
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        try storage.withUnsafeMutablePointers { (value, mutex) throws(Failure) -> Result? in
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

/// A lock's value (the header) and its mutex (the one element), in one allocation. Reached through
/// pointers only, inside the mutex: no dynamic exclusivity check runs (a checked class property was
/// one runtime call and a thread-local look-up per access, on every request's locks), and a value of
/// no size is never an access at the end of the object, which ThreadSanitizer reported as a race.
public final class LockStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
    static func make(_ value: Value) -> LockStorage<Value> {
        let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in value }, to: LockStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
        return storage
    }

    deinit {
        withUnsafeMutablePointerToElements { mutex in
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
        }
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
