import HeraldThreads
import CLinux
import Glibc
import HeraldJSON
import Synchronization

// Observers: subscribing (snapshots, replays, packed replays), restoring the history, removing.
extension Hub {
    /// The copy of `topics` kept for every observer of the same list (`Interned`): each holder of a
    /// stream's topics (its observer, its presence, its lease) holds the one array.
    public func kept(_ topics: [String]) -> [String] { topicLists.withLock { $0(topics) } }

    /// Adds an observer of `topics`. It first receives, in its queue, the snapshots or the replay
    /// that `resume` asks for, then every later event of those subjects that passes `filter`.
    /// - Parameter queueLimit: live events that may wait; one more ends the subscription (`.overflowed`).
    ///
    /// A topic that is a collection subject is watched through its filter in `collections` (every
    /// member when it has none there): its snapshot holds the members that pass, and its members'
    /// changes come as `Membership` tells.
    ///
    /// `added`: topics new to a stream that resumes (`.after`), as when a browser's shared stream takes
    /// another tab's topics. Those with state start with a snapshot as of now instead of a replay; the
    /// others' replay is exactly as without them.
    ///
    /// `values`: current values of subjects that keep them only while observed (`setWhileObserved`),
    /// set first, so the observer's snapshot shows them. `defaults`: the same, for subjects that have
    /// no value of their own (a unit not made yet); a change's value replaces one and is kept.
    ///
    /// `packedReplay`: the observer writes each event's frame as it is (an SSE stream without a
    /// localizer), so a replay without filter, of subjects that are not collections, may come packed:
    /// pieces of about `packPiece` bytes, each one event that holds the frames of many (`Event.carried`).
    /// Observers of the same topics that resume from the same id (a reconnect storm) share the pieces,
    /// made once, until the next event is kept: each gets a few events to queue and take instead of
    /// every one it missed.
    public func subscribe(
        to topics: [String], collections filters: [String: CollectionFilter] = [:], resume: ResumePoint, queueLimit: Int = 4096,
        filter: (@Sendable (Event) -> Bool)? = nil, added: Set<String> = [], values: [Update] = [], defaults: [Update] = [],
        packedReplay: Bool = false
    ) -> Subscription {
        let observer = state.withLock { state -> Observer in
            for update in values {
                state.subjects[update.topic, default: Subject()].value = update.value
                state.subjects[update.topic]?.valueWhileObserved = true
            }
            // A value for a subject that has none (a unit not made yet): its own, once it has one, wins.
            for update in defaults where state.subjects[update.topic]?.value == nil {
                state.subjects[update.topic, default: Subject()].value = update.value
                state.subjects[update.topic]?.valueWhileObserved = true
            }
            var collections: [String: CollectionFilter] = [:]
            for topic in topics where state.subjects[topic]?.collection != nil { collections[topic] = filters[topic] ?? CollectionFilter() }
            let observer = Observer(id: state.nextObserverId, interests: topics, collections: collections, limit: max(queueLimit, 1),
                                    byteLimit: observerByteLimit, released: released, filter: filter, startedAt: state.sequence)
            state.nextObserverId += 1
            var initial = initialEvents(for: observer, resume: resume, added: added, packed: packedReplay && packsReplays, in: &state)
            if initial.isEmpty {
                // Nothing to send yet (no snapshot asked for, or nothing missed): the stream still starts
                // at a position, so a client that reconnects before the first event sends a
                // Last-Event-ID and misses nothing, and the stream's first block is an event.
                initial.append(Event(id: state.sequence, order: state.order, topic: topics.first ?? "", name: .position, data: [],
                                     encoder: encoder))
            }
            // Everything published so far is in `initial` or not for this observer: an event still waiting
            // for delivery must not reach it again.
            observer.enqueueInitial(initial, coveringUpTo: state.order)
            for topic in Set(topics) { state.subjects[topic, default: Subject()].observers[observer.id] = observer }
            state.observerCount += 1
            return observer
        }
        return Subscription(observer: observer, hub: self)
    }

    /// Restores the history kept from before a restart (oldest first) and the sequence reached, so that
    /// numbers are never reused and `Last-Event-ID` replay works across restarts.
    public func restore(history events: [Event], lastSequence: UInt64) {
        state.withLock { state in
            state.history.removeAll()
            state.historyBytes = 0
            for event in events.suffix(historyLimit) {
                state.order += 1
                keep(Event(id: event.id, order: state.order, topic: event.topic, name: event.name, data: event.data,
                           tags: event.tags, encoder: encoder, itemName: Self.itemName(above: event.topic, in: state)), in: &state)
                // Each subject's last event, and its collection's, as publishing it set them (`/subjects`).
                var cursor = Substring(event.topic)
                while true {
                    state.subjects[String(cursor), default: Subject()].lastEventId = event.id
                    guard let slash = cursor.lastIndex(of: "/") else { break }
                    cursor = cursor[..<slash]
                }
            }
            state.sequence = max(lastSequence, events.last?.id ?? 0, state.sequence)
        }
    }

    /// Drops kept events older than `oldestKept` (pruned by age): replay from before it becomes a resync.
    public func forget(before oldestKept: UInt64) {
        let dropped = state.withLock { state -> Int in
            let before = state.historyBytes
            while let first = state.history.first, first.id < oldestKept { Self.dropOldest(from: &state) }
            return before - state.historyBytes
        }
        // glibc keeps freed memory for reuse unless asked: a history that shrank much gives it back.
        if dropped >= 8 << 20 { _ = clinux_malloc_trim() }
    }

    /// Gives the allocator's free memory back to the system when observers let go of at least
    /// `threshold` bytes since the last call (glibc keeps what is freed for reuse unless asked): a burst of
    /// stalled streams cut off leaves the process as large as at its peak otherwise. Call it off the hot
    /// paths (Herald calls it once a second, on the timers' thread).
    public func trimIfReleased(threshold: Int = 1 << 20) {
        guard released.take(ifAtLeast: threshold) else { return }
        _ = clinux_malloc_trim()
    }

    /// Ends every subscription (at shutdown).
    public func endAll() {
        let observers = state.withLock { state in
            state.subjects.values.flatMap { $0.observers.values }
        }
        for observer in observers { observer.end(.cancelled)?(true) }
    }

    func remove(_ observer: Observer) {
        state.withLock { remove(observer, from: &$0) }
    }

    func remove(_ observer: Observer, from state: inout State) {
        var removed = false
        for topic in Set(observer.interests) {
            // In place: a copy of the subject would copy its whole observer table, once per observer leaving.
            guard state.subjects[topic]?.observers.removeValue(forKey: observer.id) != nil else { continue }
            removed = true
            if state.subjects[topic]?.observers.isEmpty == true { state.subjects[topic]?.snapshot = nil }
            // A subject with no value (or one kept only while observed) and no observers is forgotten, so
            // names a client makes up cost nothing once it leaves.
            if let subject = state.subjects[topic], subject.value == nil || subject.valueWhileObserved, subject.collection == nil,
               subject.observers.isEmpty {
                state.subjects[topic] = nil
            }
        }
        if removed { state.observerCount -= 1 }
        // A burst of made-up topics left: their places go too.
        released(places: state.subjects.shrinkIfSparse())
    }

    /// Tells the hub that a dictionary gave up `places` of its room (`shrinkIfSparse`: the hub's
    /// subjects, presence's topics after a burst), so that the next `trimIfReleased` gives them back.
    public func released(places: Int) { released.add(places * Self.placeBytes) }

    /// About what one place of a dictionary of topics holds: its key, its value, and their storage.
    static let placeBytes = 100

    func initialEvents(for observer: Observer, resume: ResumePoint, added: Set<String>, packed: Bool,
                               in state: inout State) -> [Event] {
        switch resume {
        case .now(let snapshot):
            return snapshot ? snapshots(for: observer, in: &state, resync: false) : []
        case .unknown:
            state.resyncs += 1
            return snapshots(for: observer, in: &state, resync: true)
        case .after(let lastSeen):
            let oldest = state.history.first?.id ?? state.sequence + 1
            // Replay only when every event after `lastSeen` is still kept and `lastSeen` is not from the future.
            guard lastSeen <= state.sequence, lastSeen + 1 >= oldest else {
                state.resyncs += 1
                return snapshots(for: observer, in: &state, resync: true)
            }
            state.replays += 1
            // No collection, no filter, nothing added: the replay is its topics' events as they are, which pack.
            let pack = packed && added.isEmpty && observer.filter == nil && observer.collections.isEmpty
                ? ReplayPack(observer.interests, after: lastSeen) : nil
            if let pack, let pieces = state.packs[pack] {
                state.packsShared += 1
                return pieces
            }
            var events: [Event] = []
            // The first kept event after `lastSeen`. Ids are consecutive except where a store migration
            // removed events (stored ticks), so search rather than count.
            var low = 0, high = state.history.count
            while low < high {
                let middle = (low + high) / 2
                if state.history[middle].id <= lastSeen { low = middle + 1 } else { high = middle }
            }
            // Added topics with state start from a snapshot: their events before it are in it.
            let fresh = Set(added.filter { observer.interests.contains($0) && (state.subjects[$0]?.value != nil || state.subjects[$0]?.collection != nil) })
            // Room for a replay of a few hundred events at once, without reserving the whole history for
            // an observer that gets little of it.
            events.reserveCapacity(min(state.history.count - low, 256))
            var offset = low
            while offset < state.history.count {
                let event = state.history[offset]
                offset += 1
                if fresh.isEmpty, observer.filter == nil, observer.interests.contains(event.topic) {
                    // The event itself, as `view(of:)` gives it, without taking it a second time.
                    events.append(event)
                    continue
                }
                guard let view = observer.view(of: event) else { continue }
                if !fresh.isEmpty {
                    // The view comes through the event's own topic when watched, else through its collection.
                    let through = observer.interests.contains(event.topic) ? event.topic : Self.collection(of: event.topic)
                    if fresh.contains(through) { continue }
                }
                events.append(view)
            }
            if let pack, events.count > 1, let pieces = Self.pack(events, of: observer.interests) {
                if state.packs.count >= Self.packsKept { state.packs.removeAll() }
                state.packs[pack] = pieces
                return pieces
            }
            return events + snapshots(for: observer, of: observer.interests.filter(fresh.contains), in: &state, resync: false)
        }
    }

    /// `events` (all of `topics`, durable, each its own) in pieces of about `packPiece` bytes; nil when
    /// they are not all such events, or hold more than `packLimit` bytes.
    static func pack(_ events: [Event], of topics: [String]) -> [Event]? {
        var bytes = 0
        for event in events {
            guard topics.contains(event.topic), event.durable, event.carried == 1 else { return nil }
            bytes += event.frame.count
        }
        guard bytes <= packLimit else { return nil }
        var ranges: [ClosedRange<Int>] = []
        var (start, size) = (0, 0)
        for (index, event) in events.enumerated() {
            size += event.frame.count
            if size >= packPiece || index == events.count - 1 {
                ranges.append(start...index)
                (start, size) = (index + 1, 0)
            }
        }
        let frames = ranges.map { Event.frames(of: events[$0]) }
        // The first piece carries the file of them all, which a stream that can sends instead.
        let file = ReplayFile(frames)
        return ranges.indices.map { Event(packing: events[ranges[$0]], frame: frames[$0], file: $0 == 0 ? file : nil) }
    }

    /// `auctions` for `auctions/7`.
    static func collection(of topic: String) -> String {
        topic.firstIndex(of: "/").map { String(topic[..<$0]) } ?? topic
    }

    func snapshots(for observer: Observer, in state: inout State, resync: Bool) -> [Event] {
        snapshots(for: observer, of: observer.interests, in: &state, resync: resync)
    }

    func snapshots(for observer: Observer, of topics: [String], in state: inout State, resync: Bool) -> [Event] {
        var events: [Event] = []
        for topic in topics {
            if resync {
                let data = JSONValue.object([("topic", .string(topic)), ("lastEventId", .string(String(state.sequence)))]).bytes
                events.append(Event(id: state.sequence, order: state.order, topic: topic, name: "resync", data: data, encoder: encoder))
            }
            if let filter = observer.collections[topic] {
                let (id, order) = (state.sequence, state.order)
                events += state.subjects[topic]?.collection?.snapshot(topic, filter: filter, id: id, order: order, encoder: encoder) ?? []
            } else if let value = state.subjects[topic]?.value {
                if let made = state.subjects[topic]?.snapshot, made.id == state.sequence, made.order == state.order {
                    events.append(made)
                } else {
                    let event = Event(id: state.sequence, order: state.order, topic: topic, name: .snapshot, data: value, encoder: encoder)
                    state.subjects[topic]?.snapshot = event
                    events.append(event)
                }
            }
        }
        return events
    }
}
