import HeraldThreads
import Glibc
import Synchronization

/// Called when an idle observer has events (`false`) or has ended (`true`).
public typealias Waker = @Sendable (_ ended: Bool) -> Void

/// What queueing one event did.
enum Delivery {
    case queued
    /// Queued to an observer that was waiting: call the waker with `false`.
    case wake(Waker)
    /// The queue was full: the observer is over; remove it and call the waker (if any) with `true`.
    case overflowed(Waker?)
    /// The observer had already ended, or had the event.
    case skipped
}

/// The hub's side of one subscription: a bounded queue of events waiting to be taken.
///
/// One allocation (`Storage`): what it watches and its locked state are the header, its pthread mutex
/// the one element (as a `Lock`'s value and mutex are). An observer with a `Lock` of its own was two
/// objects, 80 and 144 bytes, and every delivery went from one to the other (heaptrack, 10,000 streams).
struct Observer: @unchecked Sendable {
    // Unchecked: `Parts.state` is reached only in `withState`, holding the mutex; the rest never changes.
    struct State {
        var queue = RingBuffer<Event>()
        var limit: Int
        /// The most bytes of live events that may wait (`Hub.historySize` each): events are shared, but
        /// an observer that stopped reading keeps every one it holds alive after the history let it go.
        var byteLimit: Int
        /// The bytes of the live events waiting now.
        var bytes = 0
        var end: ObserverEnd?
        /// Set when a poll found the queue empty: the next event must call the waker.
        var waiting = false
        var waker: Waker?
        /// Initial events (snapshots or replay) still at the front of the queue: they do not count
        /// against the limit, which is for live events.
        var initial = 0
        /// The `order` of the newest event queued, so an event reaching it through two interests is
        /// queued once.
        var lastQueued: UInt64 = 0
    }

    struct Parts {
        let id: UInt64
        let interests: [String]
        /// The interests that are collections, with the filter each is watched through.
        let collections: [String: CollectionFilter]
        let filter: (@Sendable (Event) -> Bool)?
        /// The last sequence number published when it subscribed: its first events cover everything up to it.
        let startedAt: UInt64
        /// Told how many bytes the observer let go of when it ends.
        let released: ReleasedBytes?
        var state: State
    }

    private final class Storage: ManagedBuffer<Parts, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    private let storage: Storage

    init(id: UInt64, interests: [String], collections: [String: CollectionFilter] = [:], limit: Int, byteLimit: Int = .max,
         released: ReleasedBytes? = nil, filter: (@Sendable (Event) -> Bool)?, startedAt: UInt64 = 0) {
        let parts = Parts(id: id, interests: interests, collections: collections, filter: filter, startedAt: startedAt, released: released,
                          state: State(limit: limit, byteLimit: byteLimit))
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in parts }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    // The parts that never change, read through the header's address: no copy of the whole header,
    // whose state another thread may be changing under the mutex.
    var id: UInt64 { storage.withUnsafeMutablePointerToHeader { $0.pointee.id } }
    var interests: [String] { storage.withUnsafeMutablePointerToHeader { $0.pointee.interests } }
    var collections: [String: CollectionFilter] { storage.withUnsafeMutablePointerToHeader { $0.pointee.collections } }
    var filter: (@Sendable (Event) -> Bool)? { storage.withUnsafeMutablePointerToHeader { $0.pointee.filter } }
    var startedAt: UInt64 { storage.withUnsafeMutablePointerToHeader { $0.pointee.startedAt } }
    private var released: ReleasedBytes? { storage.withUnsafeMutablePointerToHeader { $0.pointee.released } }

    /// Runs `body` with the state, holding the observer's mutex.
    @inline(__always)
    func withState<Result>(_ body: (inout State) -> Result) -> Result {
        storage.withUnsafeMutablePointers { parts, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return body(&parts.pointee.state)
        }
    }

    /// What the observer gets of `event`: the event itself on a topic it watches (if its filter takes
    /// it), else the view of a member's change that its collection's filter gives, else nothing.
    func view(of event: Event) -> Event? { view(of: event, onItsTopic: interests.contains(event.topic)) }

    /// The same, when the caller knows whether the observer watches the event's own topic (fan-out finds
    /// it among that topic's observers, or a collection's), without looking through its interests.
    func view(of event: Event, onItsTopic: Bool) -> Event? {
        storage.withUnsafeMutablePointerToHeader { parts in
            if onItsTopic { return parts.pointee.filter?(event) ?? true ? event : nil }
            guard !parts.pointee.collections.isEmpty, let membership = event.membership,
                  let filter = parts.pointee.collections[membership.collection] else { return nil }
            return membership.view(through: filter)
        }
    }

    /// Queues `event`. The caller calls any waker outside its locks.
    func enqueue(_ event: Event) -> Delivery {
        withState { state in
            guard state.end == nil, event.order > state.lastQueued else { return .skipped }
            let size = Hub.historySize(of: event)
            if state.queue.count - state.initial >= state.limit || state.bytes + size > state.byteLimit {
                // A slow consumer is cut off rather than slowing the publisher or growing without bound;
                // what it held is let go at once.
                state.end = .overflowed
                empty(&state)
                defer { state.waker = nil }  // the waker may hold the consumer: let it go
                return .overflowed(state.waker)
            }
            state.queue.append(event)
            state.bytes += size
            state.lastQueued = event.order
            guard state.waiting, let waker = state.waker else { return .queued }
            state.waiting = false
            return .wake(waker)
        }
    }

    /// Queues the first events (replay or snapshots) without counting them against the limit; later
    /// events up to `order` are skipped, as the first events cover them.
    func enqueueInitial(_ events: [Event], coveringUpTo order: UInt64) {
        withState { state in
            state.queue.reserveCapacity(state.queue.count + events.count)
            for event in events { state.queue.append(event) }
            state.lastQueued = max(state.lastQueued, order, events.last?.order ?? 0)
            state.initial += events.count
        }
    }

    func end(_ reason: ObserverEnd) -> Waker? {
        withState { state in
            guard state.end == nil else { return nil }
            state.end = reason
            empty(&state)
            defer { state.waker = nil }
            return state.waker
        }
    }

    /// Lets go of every queued event, and of the queue's storage.
    private func empty(_ state: inout State) {
        released?.add(state.bytes)
        state.queue = RingBuffer()
        state.initial = 0
        state.bytes = 0
        state.waiting = false
    }

    /// `taken` events left the front of the queue: the live ones among them no longer count.
    static func took(_ taken: [Event], from state: inout State) {
        let initial = min(state.initial, taken.count)
        state.initial -= initial
        for event in taken.dropFirst(initial) { state.bytes -= Hub.historySize(of: event) }
    }
}

/// Bytes let go of by observers, until someone takes them (`Hub.trimIfReleased`).
final class ReleasedBytes: Sendable {
    private let bytes = Atomic<Int>(0)

    func add(_ count: Int) { if count > 0 { bytes.add(count, ordering: .relaxed) } }

    /// Whether at least `threshold` were let go of; if so, the count starts again from zero.
    func take(ifAtLeast threshold: Int) -> Bool {
        guard bytes.load(ordering: .relaxed) >= threshold else { return false }
        bytes.store(0, ordering: .relaxed)
        return true
    }
}
