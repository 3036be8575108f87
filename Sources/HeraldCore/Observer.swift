import HeraldThreads
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
final class Observer: Sendable {
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

    let id: UInt64
    let interests: [String]
    /// The interests that are collections, with the filter each is watched through.
    let collections: [String: CollectionFilter]
    let filter: (@Sendable (Event) -> Bool)?
    let state: Lock<State>
    /// The last sequence number published when it subscribed: its first events cover everything up to it.
    let startedAt: UInt64

    /// Told how many bytes the observer let go of when it ends.
    private let released: ReleasedBytes?

    init(id: UInt64, interests: [String], collections: [String: CollectionFilter] = [:], limit: Int, byteLimit: Int = .max,
         released: ReleasedBytes? = nil, filter: (@Sendable (Event) -> Bool)?, startedAt: UInt64 = 0) {
        self.released = released
        self.id = id
        self.startedAt = startedAt
        self.interests = interests
        self.collections = collections
        self.filter = filter
        self.state = Lock(State(limit: limit, byteLimit: byteLimit))
    }

    /// What the observer gets of `event`: the event itself on a topic it watches (if its filter takes
    /// it), else the view of a member's change that its collection's filter gives, else nothing.
    func view(of event: Event) -> Event? { view(of: event, onItsTopic: interests.contains(event.topic)) }

    /// The same, when the caller knows whether the observer watches the event's own topic (fan-out finds
    /// it among that topic's observers, or a collection's), without looking through its interests.
    func view(of event: Event, onItsTopic: Bool) -> Event? {
        if onItsTopic { return filter?(event) ?? true ? event : nil }
        guard !collections.isEmpty, let membership = event.membership, let filter = collections[membership.collection] else { return nil }
        return membership.view(through: filter)
    }

    /// Queues `event`. The caller calls any waker outside its locks.
    func enqueue(_ event: Event) -> Delivery {
        state.withLock { state in
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
        state.withLock { state in
            state.queue.reserveCapacity(state.queue.count + events.count)
            for event in events { state.queue.append(event) }
            state.lastQueued = max(state.lastQueued, order, events.last?.order ?? 0)
            state.initial += events.count
        }
    }

    func end(_ reason: ObserverEnd) -> Waker? {
        state.withLock { state in
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
