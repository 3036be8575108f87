#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Synchronization

/// A thread that owns state (the writer, the stream engine): `ThreadBound` values check that only it
/// touches them.
public final class OwnerThread: Sendable {
    /// What the thread is called in checks' messages.
    public let name: String
    /// The thread's `pthread_self`, 0 until it runs.
    private let id = Atomic<UInt>(0)
    /// The thread that made the owner, which sets its state up until the owner runs: bound explicitly,
    /// so that no other thread may touch the state meanwhile.
    private let setUp = UInt(bitPattern: Int(bitPattern: pthread_self()))

    public init(name: String) { self.name = name }

    /// Called first thing on the owning thread: from now on only it may touch its bound values. The
    /// thread takes the owner's name (its first 15 bytes), which `top -H` and `/proc` show.
    public func bindToCurrentThread() {
        _ = clinux_name_this_thread(name)
        id.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
    }

    /// Binds the calling thread if none is bound yet: for a thread that someone else starts
    /// (libmicrohttpd's), from the first callback it runs. One atomic load once bound. True when this
    /// call bound it.
    @discardableResult
    public func adoptCurrentThread() -> Bool {
        guard id.load(ordering: .relaxed) == 0 else { return false }
        return id.compareExchange(expected: 0, desired: UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .acquiringAndReleasing).exchanged
    }

    /// Runs `body` with the calling thread standing in for the owner, which has not started: the one
    /// thread that sets the owner's state up, with the owner's checks. It stops the process when the
    /// owner runs already.
    public func standIn<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        let me = UInt(bitPattern: Int(bitPattern: pthread_self()))
        let (bound, _) = id.compareExchange(expected: 0, desired: me, ordering: .acquiringAndReleasing)
        precondition(bound, "\(name) runs already, or another thread stands in for it")
        defer { if bound { id.store(0, ordering: .releasing) } }
        return try body()
    }

    /// Whether the caller is the owning thread.
    public var isCurrent: Bool { id.load(ordering: .acquiring) == UInt(bitPattern: Int(bitPattern: pthread_self())) }

    /// Whether the caller may touch a value the thread owns: it is the owner, or, before the owner
    /// runs, the thread that made it (which sets its state up) or one standing in for it (`standIn`).
    public var mayAccess: Bool {
        let owner = id.load(ordering: .acquiring), me = UInt(bitPattern: Int(bitPattern: pthread_self()))
        return owner == me || (owner == 0 && setUp == me)
    }
}

/// State that one thread owns, in the manner of swift-nio's `NIOLoopBound`: no lock, because no other
/// thread touches it. Others reach it only through the owner's inbox (the writer's queue, the
/// engine's inbox), which runs their work on the owner. Every build checks every access (a
/// `precondition`, one atomic load and `pthread_self`).
public final class ThreadBound<Value>: @unchecked Sendable {
    // Unchecked: `value` is touched only on `owner`'s thread, which `withValue` checks.
    public let owner: OwnerThread
    @usableFromInline var value: Value

    public init(_ value: Value, owner: OwnerThread) {
        self.value = value
        self.owner = owner
    }

    /// Runs `body` with the value; on any thread but the owner's (once it runs), the process stops.
    @inlinable
    public func withValue<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        precondition(owner.mayAccess, "state of \(owner.name) touched from another thread")
        return try body(&value)
    }
}
