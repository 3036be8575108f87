import HeraldThreads
import CLinux
import Glibc
import HeraldJSON
import Synchronization

// Fan-out: the published events that wait, queued to their observers in order.
extension Hub {
    /// Queues every published event that is waiting to its observers, in order, and calls their wakers.
    /// The hub's lock is held only to take the batch and the observer sets (copy-on-write, so no copy),
    /// never while queueing: a publisher never waits for fan-out.
    ///
    /// An observer that joined after an event was published is in the sets taken, but it skips the
    /// event: its first events (snapshot or replay) already cover everything up to when it joined.
    public func deliver() {
        delivering.run {
            if let batch = deliveries() { deliver(batch) }
        }
    }

    /// A batch of published events taken for fan-out (`deliveries()`), with the observers each reaches.
    public struct Deliveries: Sendable {
        let events: [Event]
        let audiences: [String: [Audience]]

        /// Audiences up to this many observers are looked through for their shares; a larger one is
        /// taken to have an observer in every share (at 64, nearly sure with a few shares).
        static let countedAudience = 64

        /// Which of `count` shares (`deliver(_:share:of:)`) hold an observer the batch reaches: bit i
        /// for share i. The threads of shares without one need not be woken for it.
        public func shares(of count: Int) -> UInt64 {
            let all: UInt64 = count >= 64 ? .max : (1 << UInt64(max(count, 1))) - 1
            guard count > 1 else { return all }
            var wanted: UInt64 = 0
            for audience in audiences.values.joined() {
                guard audience.observers.count <= Self.countedAudience else { return all }
                for id in audience.observers.keys { wanted |= 1 << (id % UInt64(count)) }
                if wanted == all { return all }
            }
            return wanted
        }
    }

    /// Takes every published event waiting, with the observer sets each reaches; nil when none waits,
    /// or when no observer watches any of them (they are delivered: to nobody).
    /// Deliver the batches in the order taken: `deliver()` does, or N threads each deliver every batch
    /// to its own share of the observers (`deliver(_:share:of:)`), the stream engine's loops together.
    public func deliveries() -> Deliveries? {
        state.withLock { state -> Deliveries? in
            guard !state.undelivered.isEmpty else { return nil }
            let events = state.undelivered
            state.undelivered = []
            var audiences: [String: [Audience]] = [:]
            for event in events where audiences[Self.audienceKey(of: event)] == nil {
                var sets: [Audience] = []
                var cursor = Substring(event.topic)
                while true {
                    if cursor.count == event.topic.count || event.membership != nil,
                       let observers = state.subjects[String(cursor)]?.observers, !observers.isEmpty {
                        sets.append(Audience(observers: observers, ofItsTopic: cursor.count == event.topic.count))
                    }
                    guard let slash = cursor.lastIndex(of: "/") else { break }
                    cursor = cursor[..<slash]
                }
                audiences[Self.audienceKey(of: event)] = sets
            }
            // Events nobody observes (a countdown's tick with no watcher): nothing to fan out, and no
            // stream-engine loop is handed work to wake for.
            guard audiences.values.contains(where: { !$0.isEmpty }) else { return nil }
            return Deliveries(events: events, audiences: audiences)
        }
    }

    /// Queues `batch`'s events, in order, to the observers of share `share` of `shares` (those whose id
    /// is `share` modulo `shares`; every observer with one share), and calls their wakers. An observer
    /// always falls in the same share, so each share's thread keeps its observers' order. `pause` is
    /// called between observers, after every `pauseEvery` of them, with no lock held: the stream
    /// engine's loop lets its core go there when it is due to.
    public func deliver(_ batch: Deliveries, share: Int = 0, of shares: Int = 1, pause: () -> Void = {}) {
        recordDeliveringThread()
        let (share, shares) = (UInt64(share), UInt64(max(shares, 1)))
        var wakers: [Wake] = []
        var overflowed: [Observer] = []
        var sincePause = 0
        for event in batch.events {
            for audience in batch.audiences[Self.audienceKey(of: event)] ?? [] {
                for observer in audience.observers.values where shares == 1 || observer.id % shares == share {
                    if sincePause == Self.pauseEvery {
                        sincePause = 0
                        pause()
                    }
                    sincePause += 1
                    guard let view = observer.view(of: event, onItsTopic: audience.ofItsTopic) else { continue }
                    switch observer.enqueue(view) {
                    case .queued, .skipped: break
                    case .wake(let waker): wakers.append(Wake(run: waker, ended: false))
                    case .overflowed(let waker):
                        overflowed.append(observer)
                        if let waker { wakers.append(Wake(run: waker, ended: true)) }
                    }
                }
            }
        }
        if !overflowed.isEmpty {
            state.withLock { state in
                for observer in overflowed { remove(observer, from: &state) }
            }
        }
        for wake in wakers { wake.run(wake.ended) }
    }

    /// A waker to call once the batch is queued. A struct, not a tuple: an array keeps a closure in a
    /// tuple behind a reabstraction thunk of its own, an allocation for every observer woken (heaptrack:
    /// 32 bytes each, at `wakers.append`).
    private struct Wake {
        let run: Waker
        let ended: Bool
    }

    /// Observers queued to between calls of `deliver`'s `pause`.
    static let pauseEvery = 32

    /// The observers of one subject an event reaches: of the event's own topic, or of a collection above it.
    struct Audience: Sendable {
        let observers: [UInt64: Observer]
        let ofItsTopic: Bool
    }

    /// Events of one topic reach the same observers, except that only a member's change reaches its
    /// collection's: a topic's audience is kept apart for each kind (a topic never starts with `!`).
    static func audienceKey(of event: Event) -> String {
        event.membership == nil ? "!" + event.topic : event.topic
    }

    /// For the tests (`deliveringThreads`): compiled into debug builds only, so that no fan-out of a
    /// release build takes a lock only a test reads.
    func recordDeliveringThread() {
        #if DEBUG
        let thread = UInt(pthread_self())
        deliverers.withLock { threads in
            if threads[thread] == nil {
                var name = [CChar](repeating: 0, count: 16)
                let known = clinux_thread_name(&name) == 0
                threads[thread] = (known ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?", 0)
            }
            threads[thread]?.batches += 1
        }
        #endif
    }
}
