import Synchronization

/// The hub's side of one subscription: a bounded queue of events waiting to be taken.
final class Observer: Sendable {
    struct State {
        var queue = RingBuffer<Event>()
        var limit: Int
        var end: ObserverEnd?
        /// Set when a poll found the queue empty: the next event must call the waker.
        var waiting = false
        var waker: (@Sendable () -> Void)?
        /// The newest event queued, so an event reaching it through two interests is queued once.
        var lastQueued: UInt64 = 0
    }

    let id: UInt64
    let interests: [String]
    let filter: (@Sendable (Event) -> Bool)?
    let state: Mutex<State>

    init(id: UInt64, interests: [String], limit: Int, filter: (@Sendable (Event) -> Bool)?) {
        self.id = id
        self.interests = interests
        self.filter = filter
        self.state = Mutex(State(limit: limit))
    }

    func wants(_ event: Event) -> Bool {
        interests.contains { event.belongs(to: $0) } && (filter?(event) ?? true)
    }

    /// Queues `event`; returns the waker to call (outside any lock) when the observer was waiting.
    func enqueue(_ event: Event) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard state.end == nil, event.id == 0 || event.id > state.lastQueued else { return nil }
            if state.queue.count >= state.limit {
                // A slow consumer is cut off rather than slowing the publisher or growing without bound.
                state.end = .overflowed
                state.queue.removeAll()
            } else {
                state.queue.append(event)
                if event.id > 0 { state.lastQueued = event.id }
            }
            guard state.waiting else { return nil }
            state.waiting = false
            return state.waker
        }
    }

    /// Queues the first events (replay or snapshots) without counting them against the limit.
    func enqueueInitial(_ events: [Event]) {
        state.withLock { state in
            for event in events {
                state.queue.append(event)
                state.lastQueued = max(state.lastQueued, event.id)
            }
            state.limit += events.count
        }
    }

    func end(_ reason: ObserverEnd) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = reason
            state.queue.removeAll()
            state.waiting = false
            return state.waker
        }
    }
}
