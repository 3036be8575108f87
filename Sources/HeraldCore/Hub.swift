import HeraldThreads
import CLinux
import Glibc
import HeraldJSON
import Synchronization

/// The observer core: subjects with a current value, one ordered event log with a global sequence,
/// bounded history for replay, and the observers of each subject.
///
/// A change is published once: under the hub's lock it gets the next sequence number, updates the
/// subjects' current values, enters the history and waits to be delivered; `deliver()`, where
/// delivery is signalled (the stream engine's thread), queues the waiting events for their
/// observers in order. So every observer sees every subject's events in sequence order, and a new
/// observer's snapshot and live events fit together with no gap and no duplicate.
public final class Hub: Sendable {
    /// A change of a subject's current value made together with an event.
    public struct Update: Sendable {
        public let topic: String
        /// The new current value (JSON naming its topic), or nil when the subject is gone.
        public let value: [UInt8]?
        /// Set for a member of a collection subject: `value` is its entry under this key.
        public let key: String?
        /// A member's filter values (`status=open`), which collection filters look at.
        public let values: [String]

        public init(topic: String, value: [UInt8]?) {
            self.init(topic: topic, value: value, key: nil, values: [])
        }

        /// The entry `key` of the collection subject `collection` (nil: removed from it), with the
        /// values its observers' filters look at (`status=open`).
        public static func member(of collection: String, key: String, value: [UInt8]?, values: [String] = []) -> Update {
            Update(topic: collection, value: value, key: key, values: values)
        }

        private init(topic: String, value: [UInt8]?, key: String?, values: [String]) {
            self.topic = topic
            self.value = value
            self.key = key
            self.values = values
        }
    }

    /// A subject as `/subjects` reports it.
    public struct SubjectInfo: Sendable, Equatable {
        public let topic: String
        public let observers: Int
        public let lastEventId: UInt64
    }

    struct Subject {
        var value: [UInt8]? { didSet { snapshot = nil } }
        /// The value as the snapshot event last made of it, shared by the observers that arrive before
        /// the next event (its id and order are the hub's then); dropped with the last observer.
        var snapshot: Event?
        var collection: Collection?
        var lastEventId: UInt64 = 0
        var observers: [UInt64: Observer] = [:]
        /// Its value is kept only while it has observers (`setWhileObserved`): forgotten with the last.
        var valueWhileObserved = false

        /// Its own value, or, for a collection, its snapshot's first event (all there is of a small one).
        mutating func currentValue(_ topic: String, at id: UInt64, order: UInt64, encoder: Event.Encoder?) -> [UInt8]? {
            value ?? collection?.snapshot(topic, filter: CollectionFilter(), id: id, order: order, encoder: encoder).first?.data
        }
    }

    struct State {
        var sequence: UInt64 = 0
        /// Every event published, transient ones too (`Event.order`).
        var order: UInt64 = 0
        var history = RingBuffer<Event>()
        /// What the history's events cost, each as `Hub.historySize(of:)` counts it.
        var historyBytes = 0
        var subjects: [String: Subject] = [:]
        var observerCount = 0
        var nextObserverId: UInt64 = 1
        /// Observers that resumed with a replay of what they missed, and that got a resync instead.
        var replays = 0
        var resyncs = 0
        /// Published events not yet queued to their observers, oldest first.
        var undelivered: [Event] = []
        /// Packed replays (`subscribe(packedReplay:)`), the pieces by topics and the id resumed after, each
        /// for the history as it stands: the next event kept empties them all.
        var packs: [ReplayPack: [Event]] = [:]
        /// Resumes that took a packed replay made for an earlier one.
        var packsShared = 0
    }

    /// The replay of some topics after `lastSeen`, whose events' frames a pack holds in pieces
    /// (`Event(packing:)`). `topics`: the observer's, sorted, each followed by a NUL (one key for the same
    /// topics asked for in any order).
    struct ReplayPack: Hashable {
        let topics: String
        let lastSeen: UInt64

        init(_ topics: [String], after lastSeen: UInt64) {
            self.topics = topics.sorted().reduce(into: "") { $0 += $1; $0 += "\u{0}" }
            self.lastSeen = lastSeen
        }
    }

    /// A packed replay's pieces hold about this many bytes each, and the stream engine writes each with
    /// one `send` (it takes whole events) when it does not send the pack's file (`ReplayFile`: a stream
    /// sends that instead, unless it could not be made). Measured in the reconnect storm (100 missed
    /// bids, about 38 KB), before the file: CPU per resumed client 68–78 µs with 8 KiB pieces, 59–67 µs
    /// with 32 KiB, 53–64 µs with 64 KiB (BENCHMARKS.md, "Packed replays").
    static let packPiece = 32 * 1024
    /// Replays larger than this are not packed (each pack holds a copy of its events' frames, and its
    /// file another: `ReplayFile`) …
    static let packLimit = 1 << 20
    /// … and at most this many are kept at once.
    static let packsKept = 8

    /// How many past events are kept for replay.
    public let historyLimit: Int
    /// How many bytes the kept events may hold (`historySize(of:)` each); the older go first, whichever
    /// limit is reached first. The newest event is kept whatever its size.
    public let historyByteLimit: Int
    /// How many bytes of live events (`historySize(of:)` each) one observer may have waiting before it
    /// is cut off as a slow consumer, whatever `queueLimit` says of their count.
    public let observerByteLimit: Int
    /// Bytes that observers cut off or ended let go of since the last `trimIfReleased`.
    let released = ReleasedBytes()
    private let encoder: Event.Encoder?
    private let state = Lock(State())
    /// Called when an event starts waiting for delivery; nil: `publish` delivers.
    private let deliverySignal = Lock<Signal?>(nil)

    /// A closure kept in a struct. Swift 6.3 wraps a bare closure (or a tuple of them) kept in a
    /// `Lock` (or a `Mutex`) in one more reabstraction thunk each time `withLock { $0 }` reads it, so every call
    /// costs more than the last and the chain of thunks finally overflows the stack; a closure inside
    /// a struct is kept as it is.
    private struct Signal: Sendable {
        let call: @Sendable () -> Void
    }
    /// Held while delivering, so batches are queued one after another, in order.
    private let delivering = CriticalSection()
    /// The threads that queued events to observers, by `pthread_self()`: their names and batch counts.
    private let deliverers = Lock<[UInt: (name: String, batches: Int)]>([:])

    /// - Parameter encoder: encodes each event once for delivery (`Event.frame`); nil leaves frames empty.
    public init(historyLimit: Int = 10_000, historyByteLimit: Int = 64 << 20, observerByteLimit: Int = 16 << 20,
                encoder: Event.Encoder? = nil) {
        self.historyLimit = max(historyLimit, 1)
        self.historyByteLimit = max(historyByteLimit, 1)
        self.observerByteLimit = max(observerByteLimit, 1)
        self.encoder = encoder
    }

    /// What an event costs the history: its data and its frame, and the bookkeeping around them.
    static func historySize(of event: Event) -> Int { event.data.count + event.frame.count + 160 }

    /// Keeps `event` in the history, dropping the oldest past either limit.
    private func keep(_ event: Event, in state: inout State) {
        state.history.append(event)
        if !state.packs.isEmpty { state.packs.removeAll() }
        state.historyBytes += Self.historySize(of: event)
        while state.history.count > historyLimit || (state.historyBytes > historyByteLimit && state.history.count > 1) {
            Self.dropOldest(from: &state)
        }
    }

    /// Drops the oldest kept event, and its bytes from the count.
    private static func dropOldest(from state: inout State) {
        guard let dropped = state.history.removeFirst() else { return }
        state.historyBytes -= historySize(of: dropped)
    }

    /// The newest sequence number published.
    public var lastEventId: UInt64 { state.withLock { $0.sequence } }

    /// Observers that resumed with a replay (`Last-Event-ID` within the history), and that got a
    /// resync (an id unknown, or older than the history).
    public var resumes: (replays: Int, resyncs: Int) { state.withLock { ($0.replays, $0.resyncs) } }

    /// Resumes that took a packed replay made for an earlier resume from the same id.
    var sharedReplays: Int { state.withLock { $0.packsShared } }

    /// The oldest event kept for replay; nil when none is.
    public var oldestEventId: UInt64? { state.withLock { $0.history.first?.id } }

    /// Events kept for replay.
    public var historyCount: Int { state.withLock { $0.history.count } }

    /// Bytes the events kept for replay hold (as `historyByteLimit` counts them).
    public var historyByteCount: Int { state.withLock { $0.historyBytes } }

    /// The number of live observers.
    public var observerCount: Int { state.withLock { $0.observerCount } }

    /// Each thread that has queued published events to observers (its name), with how many batches
    /// it queued. Fan-out belongs to the stream engine's loops: the server checks that it never runs on
    /// a thread that answers requests, which would make a publisher wait for every observer.
    public var deliveringThreads: [String: Int] {
        deliverers.withLock { threads in
            threads.values.reduce(into: [:]) { $0[$1.name, default: 0] += $1.batches }
        }
    }

    /// Subjects the hub holds, shown or not (for tests of what it frees).
    var heldSubjectCount: Int { state.withLock { $0.subjects.count } }

    /// Every subject that has a value or observers.
    public var subjects: [SubjectInfo] {
        state.withLock { state in
            state.subjects
                .filter { $0.value.value != nil || $0.value.collection != nil || !$0.value.observers.isEmpty }
                .map { SubjectInfo(topic: $0.key, observers: $0.value.observers.count, lastEventId: $0.value.lastEventId) }
                .sorted { $0.topic < $1.topic }
        }
    }

    /// A subject's current value.
    public func value(of topic: String) -> [UInt8]? {
        state.withLock { state in
            state.subjects[topic]?.currentValue(topic, at: state.sequence, order: state.order, encoder: encoder)
        }
    }

    /// Sets current values without an event (for seeding state at start).
    public func set(_ updates: [Update]) {
        state.withLock { state in
            for update in updates { Self.apply(update, to: &state) }
        }
    }

    /// Sets a value that lives only while its subject is observed (presence, whose state its owner
    /// keeps): a subject nobody observes takes none, so a topic a client made up costs nothing once it
    /// leaves. A new observer brings the value it starts from (`subscribe`'s `values`). `value` is made
    /// only when the subject is observed (under the hub's lock): presence's value changes at every
    /// stream that opens or closes, and is rarely watched.
    public func setWhileObserved(_ topic: String, value: () -> [UInt8]) {
        state.withLock { state in
            guard state.subjects[topic]?.observers.isEmpty == false else { return }
            state.subjects[topic]?.value = value()
            state.subjects[topic]?.valueWhileObserved = true
        }
    }

    /// Makes `topic` a collection subject: its snapshot is `{"topic":…,"<arrayName>":[…]}` of its members'
    /// entries, in id order, and its observers get its members' changes as events named `itemName`
    /// (and `left`), through their filters (see `Membership`). Declare collections before publishing.
    public func declareCollection(_ topic: String, arrayName: String, itemName: EventName) {
        state.withLock { state in
            state.subjects[topic, default: Subject()].collection = Collection(arrayName: arrayName, itemName: itemName)
        }
    }

    /// The name members' events have on the collection above `topic` (`auction` for `auctions/7`).
    private static func itemName(above topic: String, in state: State) -> EventName? {
        guard let slash = topic.lastIndex(of: "/") else { return nil }
        return state.subjects[String(topic[..<slash])]?.collection?.itemName
    }

    private static func apply(_ update: Update, to state: inout State) {
        if let key = update.key {
            // Changed in place: a copy of the collection taken out and put back would copy every
            // member at every change.
            state.subjects[update.topic]?.collection?.set(key, entry: update.value, values: update.values)
        } else {
            // A value a change set is the subject's own, kept whether observed or not.
            state.subjects[update.topic, default: Subject()].value = update.value
            state.subjects[update.topic]?.valueWhileObserved = false
        }
    }

    /// Publishes one event on `topic` and applies `updates` in the same step. The event gets `id` when
    /// given, else the next sequence number. A given id must be higher than every id before it: the
    /// store that numbers events is their only source, and a lower one is a bug, not a renumbering.
    ///
    /// A transient event (`durable: false`, a countdown's tick) is delivered and applies its updates,
    /// but takes no id of its own (it carries the current sequence) and is not kept for replay: a
    /// client that reconnects gets the durable events it missed and the current values, never stale news.
    ///
    /// The event is numbered, kept and applied at once; it reaches the observers in `deliver()`. Without
    /// a delivery signal (`deliverWhenSignalled`) this call delivers before it returns; with one, it only
    /// calls the signal, once for each batch of events waiting, and whoever owns delivery calls `deliver()`.
    @discardableResult
    public func publish(
        id: UInt64? = nil, durable: Bool = true, topic: String, name: EventName, tags: [String] = [], updates: [Update] = [],
        data: [UInt8]
    ) -> Event {
        let (event, firstWaiting) = state.withLock { state -> (Event, Bool) in
            state.order += 1
            if durable {
                let next = id ?? state.sequence + 1
                precondition(next > state.sequence, "event id \(next) is not above the last published, \(state.sequence)")
                state.sequence = next
            }
            let event = Event(id: state.sequence, order: state.order, durable: durable, topic: topic, name: name, data: data,
                              tags: tags, encoder: encoder, itemName: Self.itemName(above: topic, in: state))
            if durable { keep(event, in: &state) }
            for update in updates { Self.apply(update, to: &state) }
            // The event's own topic and every topic above it ("units/7" → "units"). Observers above its
            // own topic (a collection's) get only a member's change: not a countdown's tick.
            var cursor = Substring(topic)
            var observed = false
            while true {
                if durable { state.subjects[String(cursor)]?.lastEventId = event.id }
                if cursor.count == topic.count || event.membership != nil {
                    observed = observed || state.subjects[String(cursor)]?.observers.isEmpty == false
                }
                guard let slash = cursor.lastIndex(of: "/") else { break }
                cursor = cursor[..<slash]
            }
            // An event nobody observes now needs no delivery: whoever subscribes later gets a snapshot
            // or replay that covers it.
            guard observed else { return (event, false) }
            state.undelivered.append(event)
            return (event, state.undelivered.count == 1)
        }
        if let signal = deliverySignal.withLock({ $0 }) {
            if firstWaiting { signal.call() }
        } else {
            deliver()
        }
        return event
    }

    /// Makes `publish` leave delivery to the caller of `deliver()`: `signal` is called (outside every
    /// lock) when an event starts waiting for it. Set once, before publishing.
    public func deliverWhenSignalled(_ signal: @escaping @Sendable () -> Void) {
        deliverySignal.withLock { $0 = Signal(call: signal) }
    }

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
        fileprivate let events: [Event]
        fileprivate let audiences: [String: [Audience]]
    }

    /// Takes every published event waiting, with the observer sets each reaches; nil when none waits.
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
        var wakers: [(Waker, Bool)] = []
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
                    case .wake(let waker): wakers.append((waker, false))
                    case .overflowed(let waker):
                        overflowed.append(observer)
                        if let waker { wakers.append((waker, true)) }
                    }
                }
            }
        }
        if !overflowed.isEmpty {
            state.withLock { state in
                for observer in overflowed { remove(observer, from: &state) }
            }
        }
        for (waker, ended) in wakers { waker(ended) }
    }

    /// Observers queued to between calls of `deliver`'s `pause`.
    static let pauseEvery = 32

    /// The observers of one subject an event reaches: of the event's own topic, or of a collection above it.
    fileprivate struct Audience: Sendable {
        let observers: [UInt64: Observer]
        let ofItsTopic: Bool
    }

    /// Events of one topic reach the same observers, except that only a member's change reaches its
    /// collection's: a topic's audience is kept apart for each kind (a topic never starts with `!`).
    private static func audienceKey(of event: Event) -> String {
        event.membership == nil ? "!" + event.topic : event.topic
    }

    private func recordDeliveringThread() {
        let thread = UInt(pthread_self())
        deliverers.withLock { threads in
            if threads[thread] == nil {
                var name = [CChar](repeating: 0, count: 16)
                let known = clinux_thread_name(&name) == 0
                threads[thread] = (known ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?", 0)
            }
            threads[thread]?.batches += 1
        }
    }

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
            var initial = initialEvents(for: observer, resume: resume, added: added, packed: packedReplay, in: &state)
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

    private func remove(_ observer: Observer, from state: inout State) {
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

    private func initialEvents(for observer: Observer, resume: ResumePoint, added: Set<String>, packed: Bool,
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
    private static func pack(_ events: [Event], of topics: [String]) -> [Event]? {
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
    private static func collection(of topic: String) -> String {
        topic.firstIndex(of: "/").map { String(topic[..<$0]) } ?? topic
    }

    private func snapshots(for observer: Observer, in state: inout State, resync: Bool) -> [Event] {
        snapshots(for: observer, of: observer.interests, in: &state, resync: resync)
    }

    private func snapshots(for observer: Observer, of topics: [String], in state: inout State, resync: Bool) -> [Event] {
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
