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
        let values: [String]

        public init(topic: String, value: [UInt8]?) {
            self.init(topic: topic, value: value, key: nil, values: [])
        }

        /// The entry `key` of the collection subject `collection` (nil: removed from it), with the
        /// values its observers' filters look at.
        public static func member(of collection: String, key: String, value: [UInt8]?, values: [FilterValue] = []) -> Update {
            Update(topic: collection, value: value, key: key, values: values.map(\.text))
        }

        init(topic: String, value: [UInt8]?, key: String?, values: [String]) {
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
    /// with 32 KiB, 53–64 µs with 64 KiB (`git show dad6eb7:BENCHMARKS.md`, "Packed replays").
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
    let encoder: Event.Encoder?
    let state = Lock(State())
    /// Observers' lists of topics, each kept once (`kept(_:)`).
    let topicLists = Lock(Interned<[String]>())
    /// Called (outside every lock) when an event starts waiting for delivery by the caller of
    /// `deliveries()`; nil: `publish` delivers.
    let deliverySignal: (@Sendable () -> Void)?
    /// Held while delivering, so batches are queued one after another, in order.
    let delivering = CriticalSection()
    /// The threads that queued events to observers, by `pthread_self()`: their names and batch counts.
    let deliverers = Lock<[UInt: (name: String, batches: Int)]>([:])

    /// Whether a replay asked for packed (`subscribe(packedReplay:)`) comes packed, or as its events;
    /// false only to compare the two paths (`PackedReplayTwinTests`).
    let packsReplays: Bool

    /// - Parameters:
    ///   - encoder: encodes each event once for delivery (`Event.frame`); nil leaves frames empty.
    ///   - signal: makes `publish` leave delivery to the caller of `deliveries()` (the stream engine),
    ///     and is called, outside every lock, when an event starts waiting for it; nil: `publish` delivers.
    public init(historyLimit: Int = 10_000, historyByteLimit: Int = 64 << 20, observerByteLimit: Int = 16 << 20,
                packsReplays: Bool = true, encoder: Event.Encoder? = nil, signal: (@Sendable () -> Void)? = nil) {
        self.packsReplays = packsReplays
        deliverySignal = signal
        self.historyLimit = max(historyLimit, 1)
        self.historyByteLimit = max(historyByteLimit, 1)
        self.observerByteLimit = max(observerByteLimit, 1)
        self.encoder = encoder
    }

    /// What an event costs the history: its data and its frame, and the bookkeeping around them.
    static func historySize(of event: Event) -> Int { event.data.count + event.frame.count + 160 }

    /// Keeps `event` in the history, dropping the oldest past either limit.
    func keep(_ event: Event, in state: inout State) {
        state.history.append(event)
        if !state.packs.isEmpty { state.packs.removeAll() }
        state.historyBytes += Self.historySize(of: event)
        while state.history.count > historyLimit || (state.historyBytes > historyByteLimit && state.history.count > 1) {
            Self.dropOldest(from: &state)
        }
    }

    /// Drops the oldest kept event, and its bytes from the count.
    static func dropOldest(from state: inout State) {
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
    /// a thread that answers requests, which would make a publisher wait for every observer. Debug
    /// builds (the tests') only: a release build records none.
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
    static func itemName(above topic: String, in state: State) -> EventName? {
        guard let slash = topic.lastIndex(of: "/") else { return nil }
        return state.subjects[String(topic[..<slash])]?.collection?.itemName
    }

    /// A subject's own value set in place, its topic looked up once.
    private static func setValue(_ value: [UInt8]?, of subject: inout Subject) {
        subject.value = value
        subject.valueWhileObserved = false
    }

    static func apply(_ update: Update, to state: inout State) {
        if let key = update.key {
            // Changed in place: a copy of the collection taken out and put back would copy every
            // member at every change.
            state.subjects[update.topic]?.collection?.set(key, entry: update.value, values: update.values)
        } else {
            // A value a change set is the subject's own, kept whether observed or not.
            setValue(update.value, of: &state.subjects[update.topic, default: Subject()])
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
    /// a delivery signal (`init(signal:)`) this call delivers before it returns; with one, it only
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
        if let signal = deliverySignal {
            if firstWaiting { signal() }
        } else {
            deliver()
        }
        return event
    }
}
