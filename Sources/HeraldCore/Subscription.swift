import HeraldThreads
import Synchronization

/// What `Subscription.poll` found.
public enum Poll: Sendable {
    /// Events to deliver, oldest first.
    case events([Event])
    /// Nothing queued. The waker will be called once when something is.
    case idle
    /// The subscription is over; nothing more will come.
    case ended(ObserverEnd)
}

/// What `Subscription.drain` did.
public enum Drained: Sendable {
    /// Events were handed over.
    case taken
    /// Nothing queued. The waker will be called once when something is.
    case idle
    /// The subscription is over; nothing more will come.
    case ended(ObserverEnd)
}

/// An observer's handle: take queued events with `poll`, stop with `cancel()` (or by dropping it).
public final class Subscription: Sendable {
    private let observer: Observer
    private let hub: Hub

    init(observer: Observer, hub: Hub) {
        self.observer = observer
        self.hub = hub
    }

    deinit { cancel() }

    /// The last sequence number published when it subscribed: its first events (snapshot or replay)
    /// cover every event up to it.
    public var startedAt: UInt64 { observer.startedAt }

    /// Its observer's id: which share of a batch reaches it (`Hub.deliver(_:share:of:)`).
    public var observerID: UInt64 { observer.id }

    /// Sets the function called, on the publisher's thread and outside every lock, when events
    /// arrive after a poll returned `.idle` (with `false`), or when the subscription ends (with `true`).
    public func setWaker(_ waker: @escaping Waker) {
        observer.withState { $0.waker = waker }
    }

    /// Whether its first events (a snapshot or a replay) are still queued.
    public var catchingUp: Bool { observer.withState { $0.initial > 0 } }

    /// Takes up to `limit` queued events.
    public func poll(limit: Int = .max) -> Poll {
        observer.withState { state in
            if let end = state.end { return .ended(end) }
            if state.queue.isEmpty {
                state.waiting = true
                return .idle
            }
            var events: [Event] = []
            events.reserveCapacity(min(limit, state.queue.count))
            while events.count < limit, let event = state.queue.removeFirst() { events.append(event) }
            Observer.took(events, from: &state)
            return .events(events)
        }
    }

    /// Hands queued events to `body`, oldest first, until it returns false (that event is taken too)
    /// or the queue is empty. `body` runs under the subscription's lock: it must only copy.
    /// - Returns: `.taken` when events were taken, `.idle` when there were none (the waker will be
    ///   called), `.ended` when the subscription is over.
    public func drain(_ body: (Event) -> Bool) -> Drained {
        observer.withState { state in
            if let end = state.end { return .ended(end) }
            if state.queue.isEmpty {
                state.waiting = true
                return .idle
            }
            var taken = 0
            while let event = state.queue.removeFirst() {
                taken += 1
                if taken > state.initial { state.bytes -= Hub.historySize(of: event) }
                if !body(event) { break }
            }
            state.initial = max(0, state.initial - taken)
            return .taken
        }
    }

    /// Stops the subscription and removes it from its subjects. Safe to call more than once.
    public func cancel() {
        hub.remove(observer)
        observer.end(.cancelled)?(true)
    }
}
