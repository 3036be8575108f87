public import Foundation
import CLinux
import HeraldThreads
import Synchronization

/// Herald's state in a PostgreSQL database (`--store postgres://…`): the same records, auctions, bids
/// and event log as `SQLiteStore`, in tables named `herald_…`, so the database may hold others.
///
/// Several Heralds (replicas) may share a database. A batch is one transaction that first takes the
/// database's write lock (a transaction advisory lock), so batches of all replicas run one at a time;
/// it reads the committed sequence, so its Herald can first catch up with what the others committed.
/// Its changes are pipelined (sent without waiting for their answers), so a batch takes one round trip
/// to begin and one to commit, however many changes it holds; a change PostgreSQL refuses fails the
/// whole batch. The sequence row is written last, with a
/// `pg_notify('herald', …)` that every replica's listener gets at commit. So the ids are gapless, in
/// commit order, and the same on every replica.
///
/// The notifications carry the batch's news (`CommitNews`: its events and what it changed), so the
/// other replicas take it in as soon as their listeners hear it, on their writers, without the lock
/// and without reading it back: before a batch asks for the lock, and while it waits for it. What a
/// batch still finds missing when it has the lock (news not heard yet, or too large to carry) it
/// reads, as before. PostgreSQL syncs its log at each commit
/// (`synchronous_commit` is on for Herald's session), so a commit it acknowledged survives a crash of
/// either process.
public final class PostgresStore: Store {
    /// Every commit is durable when PostgreSQL acknowledges it: the writer has nothing to sync.
    public let synchronous = Synchronous.full
    public let location: String
    public let isShared = true
    private let connection: Lock<State>
    /// Whether the connection was up when last used (readiness reads it without waiting for the writer).
    private let connected = Atomic<Bool>(true)
    /// A listener for the commits of every replica, on a connection and a thread of its own (from its
    /// `start()`): it calls `heard` after a notification of a revision this store has not seen (not
    /// after its own commits), and after each (re)connection, when some may have been missed. While it
    /// cannot connect, readiness says the database is lost.
    public func listen(_ heard: @escaping @Sendable () -> Void) -> PostgresListener {
        wakeAfterFailure.withLock { $0 = Wake(run: heard) }
        // Once listening, the revision committed then: news of what came before may have been missed
        // (it is read), what follows is heard.
        let since = PostgresListener.Since(sql: "SELECT revision AS listening_since FROM herald_sequence") { [self] value in
            let revision = Int64(value) ?? .max
            heardNews.withLock { $0.missedBefore = max($0.missedBefore, revision) }
        }
        return PostgresListener(url: url, channel: Self.channel, seal: seal, listening: listening, since: since) { [self] payloads in
            guard let payloads else {
                heardRevision.max(seen.load(ordering: .relaxed) + 1, ordering: .relaxed)
                signalNews()
                return heard()
            }
            // A payload is the revision committed, with a part of its news or alone; one that does not
            // read counts as news. This store's own commit is not (the notification may come before
            // `seen` moves past it).
            let headers = payloads.map(CommitNews.header)
            let revisions = headers.map { $0?.revision ?? .max }
            if assemble(headers) { signalNews() }
            heardRevision.max(revisions.max() ?? .max, ordering: .relaxed)
            let (known, own) = (seen.load(ordering: .relaxed), committing.load(ordering: .relaxed))
            guard revisions.contains(where: { $0 > known && $0 != own }) else { return }
            othersHeard.store(Self.milliseconds(), ordering: .relaxed)
            heard()
        }
    }

    /// The revision this store's batch is committing, or committed last.
    private let committing = Atomic<Int64>(-1)

    /// Other replicas' news, as the listener heard it: parts of a revision's news still coming, and
    /// news whole, by revision, until the writer takes it in (or reads past it).
    private struct Heard: Sendable {
        var parts: [Int64: [Substring?]] = [:]
        var whole: [Int64: CommitNews] = [:]
        /// The newest revision heard of without its news (too large to carry, not text, or heard
        /// without a word after the listener connected again): up to it, a batch reads.
        var missedBefore: Int64 = -1
        /// The newest revision a notification named (with news or without). Not `heardRevision`: that
        /// counts an unreadable payload as the newest there can be, so a replica would never be caught
        /// up from news again; here it counts nothing, and `missedBefore` makes a batch read it.
        var newest: Int64 = -1
    }
    private let heardNews = Lock(Heard())
    /// Signalled when news is whole: wakes a batch that waits for the lock, to take it in meanwhile.
    private let newsWake: Int32 = cepoll_eventfd()
    /// Runs on the writer: takes news into memory (`onNews`).
    private let takeIn = Lock<TakeIn?>(nil)
    private struct TakeIn: Sendable {
        let run: @Sendable (_ events: [StoredEvent], _ changes: StoredChanges) -> NewsTaken
    }
    /// The revisions taken in from news, not read back (tests tell the two ways apart by it).
    private let newsTakenIn = Atomic<Int>(0)
    var revisionsTakenFromNews: Int { newsTakenIn.load(ordering: .relaxed) }
    /// News kept for at most this many revisions ahead of the writer; beyond, it is read back.
    private static let heardLimit = 1_000

    /// PostgreSQL's notification queue empties only as fast as its slowest listener reads: a replica
    /// paused with its connection open (or any session that listens and sits in a transaction) holds
    /// it, and once it is full (8 GB) every commit fails. News (about 8 KB a batch, measured) fills it
    /// hundreds of times faster than bare revisions. Three replicas writing as fast as they can leave
    /// at most one of its 8 KB pages unread (measured twice a second), so more than 8 means a listener
    /// stopped reading: then (read at most once a second, in a batch's first round trip) commits
    /// notify their revision alone, and the others read what they committed. Internal: a test sets it
    /// below zero, before the store's first batch.
    nonisolated(unsafe) var newsQueueLimit = 8.0 * 8_192 / (8.0 * 1_024 * 1_024 * 1_024)
    /// Whether commits carry their news now (false while the queue is above `newsQueueLimit`).
    private let carryNews = Atomic<Bool>(true)
    var carriesNews: Bool { carryNews.load(ordering: .relaxed) }
    /// When the queue's use was last read (`milliseconds()`).
    private let queueRead = Atomic<Int64>(.min / 2)

    public func onNews(_ run: @escaping @Sendable (_ events: [StoredEvent], _ changes: StoredChanges) -> NewsTaken) {
        takeIn.withLock { $0 = TakeIn(run: run) }
    }

    private func signalNews() { cepoll_eventfd_signal(newsWake) }

    deinit { if newsWake >= 0 { close(newsWake) } }

    /// Puts the parts of news in the payloads' headers (`CommitNews.header`) together (on the
    /// listener's thread); true when some news is now whole.
    private func assemble(_ headers: [CommitNews.Header?]) -> Bool {
        let known = seen.load(ordering: .relaxed)
        return heardNews.withLock { (heard: inout Heard) -> Bool in
            var whole = false
            for header in headers {
                // An unreadable payload names no revision: `missedBefore` below covers it.
                heard.newest = max(heard.newest, header?.revision ?? -1)
                guard let header, let part = header.part else {
                    let revision = header?.revision ?? .max
                    heard.missedBefore = max(heard.missedBefore, revision == .max ? known + Int64(Self.heardLimit) : revision)
                    whole = true  // wakes a batch waiting for news, which then reads
                    continue
                }
                let revision = header.revision
                guard revision > known, revision <= known + Int64(Self.heardLimit) else { continue }
                var parts = heard.parts[revision] ?? Array(repeating: nil, count: part.count)
                guard parts.count == part.count else { continue }
                parts[part.index] = part.body
                guard parts.allSatisfy({ $0 != nil }) else {
                    heard.parts[revision] = parts
                    continue
                }
                heard.parts[revision] = nil
                var body: [UInt8] = []
                for part in parts { if let part { body.append(contentsOf: part.utf8) } }
                if let news = CommitNews(revision: revision, body: body) {
                    heard.whole[revision] = news
                } else {
                    heard.missedBefore = max(heard.missedBefore, revision)
                }
                whole = true
            }
            return whole
        }
    }

    /// The longest a batch that has the lock waits for the news of the revisions it found committed
    /// (its predecessor's commit, heard a moment after the lock came free), before it reads them.
    static let newsWait: Int32 = 20

    /// With the lock, behind `revision`: takes in the news of the revisions missed, waiting for it up
    /// to `newsWait` milliseconds, unless some of it is known not to come. Whatever is still missing
    /// after it is read.
    private func awaitNews(through revision: Int64, _ state: inout State) {
        let deadline = Self.milliseconds() + Int64(Self.newsWait)
        while true {
            guard takeInNews(&state) != .declined, state.seenRevision >= 0, state.seenRevision < revision,
                  heardNews.withLock({ $0.missedBefore }) <= state.seenRevision else { return }
            let left = deadline - Self.milliseconds()
            guard left > 0 else { return }
            var descriptor = pollfd(fd: newsWake, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, Int32(left)) > 0 { cepoll_eventfd_drain(newsWake) }
        }
    }

    public func takeInNews() -> Bool {
        let caughtUp = try? use { state throws(StoreError) -> Bool in
            guard !state.inBatch, takesNews, takeInNews(&state) != .failed, state.seenRevision >= 0 else { return false }
            let heard = heardNews.withLock { ($0.newest, $0.missedBefore) }
            return heard.0 <= state.seenRevision && heard.1 <= state.seenRevision
        }
        return caughtUp ?? false
    }

    /// Whether this store's writer takes in news (then a batch waits for news instead of reading).
    private var takesNews: Bool { takeIn.withLock { $0 } != nil }

    /// Takes in, on the writer, the news of every revision after the one seen, as far as it is whole
    /// and unbroken; the state then has seen them. Declined news is left to be read back.
    @discardableResult
    private func takeInNews(_ state: inout State) -> NewsTaken? {
        guard state.seenRevision >= 0, let takeIn = takeIn.withLock({ $0 }) else { return nil }
        let seenRevision = state.seenRevision
        let news = heardNews.withLock { heard -> CommitNews? in
            heard.whole = heard.whole.filter { $0.key > seenRevision }
            heard.parts = heard.parts.filter { $0.key > seenRevision }
            var joined: CommitNews?
            var next = seenRevision + 1
            while let news = heard.whole.removeValue(forKey: next) {
                joined = joined.map { $0.joined(with: news) } ?? news
                next += 1
            }
            return joined
        }
        guard let news else { return nil }
        let taken = takeIn.run(news.events, news.changes)
        switch taken {
        case .taken:
            newsTakenIn.add(Int(news.revision - seenRevision), ordering: .relaxed)
            state.seenRevision = news.revision
            if let last = news.events.last?.id { state.seenSequence = last }
        case .declined:
            break
        case .failed:
            // Memory took a part of it: the next batch restores everything.
            state.seenRevision = -1
            state.seenSequence = nil
        }
        return taken
    }
    /// What the listener wakes; also woken when a commit fails, since another replica's commit of
    /// the same revision may then have been taken for this store's own.
    private let wakeAfterFailure = Lock<Wake?>(nil)
    private struct Wake: Sendable {
        let run: @Sendable () -> Void
    }

    /// Told how long each batch waited for the write lock and held it (`onLockTimes`).
    private let lockTimes = Lock<LockTimes?>(nil)
    private struct LockTimes: Sendable {
        let report: @Sendable (_ waited: Duration, _ held: Duration) -> Void
    }

    public func onLockTimes(_ report: @escaping @Sendable (_ waited: Duration, _ held: Duration) -> Void) {
        lockTimes.withLock { $0 = LockTimes(report: report) }
    }

    /// The batch let the write lock go (it committed, or was abandoned): tells how long it held it.
    private func lockReleased(_ state: inout State) {
        guard let lock = state.lock else { return }
        state.lock = nil
        lockTimes.withLock { $0 }?.report(.nanoseconds(lock.waited), .nanoseconds(Self.nanoseconds() - lock.since))
    }

    /// A monotonic clock in nanoseconds.
    private static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The revision this store last read or wrote (`State.seenRevision`, for the listener's thread).
    private let seen = Atomic<Int64>(-1)
    /// The newest revision the listener heard of: when it is ahead of the one seen, the next batch
    /// reads what it missed in the round trip that takes the lock.
    private let heardRevision = Atomic<Int64>(-1)
    /// When the listener last heard of another replica's commit (`milliseconds()`). Within a second of
    /// it, every batch reads what it may have missed with its lock: a batch that waits for the lock
    /// usually waits for another replica's commit, which it cannot have heard of when it asked.
    private let othersHeard = Atomic<Int64>(.min / 2)
    private static let othersWriting: Int64 = 1_000

    /// A monotonic clock in milliseconds.
    private static func milliseconds() -> Int64 { nanoseconds() / 1_000_000 }
    /// How many batches read what they missed with their lock (tests tell the two ways apart by it).
    private let prefetches = Atomic<Int>(0)
    var prefetchedBatches: Int { prefetches.load(ordering: .relaxed) }

    /// Whether the listener (if any) is connected.
    private let listening = SharedFlag(true)
    /// The database's size at the last scrape that found the connection free.
    private let lastSize = Atomic<Int64>(-1)

    /// The longest a batch waits for the write lock, and the longest a session sits idle in a
    /// transaction, by default. Contended batches wait milliseconds. A replica that stopped while it
    /// held the lock (a process paused, a machine gone quiet with its connection still open) would
    /// otherwise stop every replica's writes for good: PostgreSQL ends its session after this long,
    /// and a batch that waited this long is refused (503), not left hanging.
    public static let lockWait: Duration = .seconds(60)

    /// Set on every session of the store's: acknowledged commits are on disk (`synchronous_commit`),
    /// and neither a wait for a lock nor a transaction left idle lasts for ever.
    private let settings: String

    static func settings(lockWait: Duration) -> String {
        let milliseconds = max(1, Int64((lockWait / .milliseconds(1)).rounded(.up)))
        return "SET synchronous_commit = on; SET lock_timeout = \(milliseconds); SET idle_in_transaction_session_timeout = \(milliseconds)"
    }

    /// The key of the advisory lock each batch takes, the database's write lock ("HERA").
    static let lockKey: Int64 = 0x4845_5241
    /// The channel commits notify, with the committed sequence as payload.
    static let channel = "herald"
    private let url: String

    private struct State: Sendable {
        let connection: PostgresConnection
        /// Seals what this store notifies the other replicas of.
        let seal: ChannelSeal
        /// Whether a batch transaction is open: then changes are queued in its pipeline.
        var inBatch = false
        /// The sequence the batch's events reached, written when the batch commits.
        var batchSequence: UInt64?
        /// Whether the batch wrote anything (then the revision moves when it commits).
        var batchWrote = false
        /// The database's revision (one more for every batch of any replica that wrote something) as
        /// this store last read or wrote it.
        var seenRevision: Int64 = -1
        /// In a batch that began behind: the revision seen before it, from which the changes it missed
        /// can be read; -1 when unknown.
        var missedSince: Int64 = -1
        /// The sequence this store last read or wrote; nil when unknown.
        var seenSequence: UInt64?
        /// What a batch that expected to begin behind read with its lock: the events after a sequence,
        /// and the changes after the revision seen before it.
        var prefetched: (after: UInt64, events: [StoredEvent], changes: StoredChanges)?
        /// The batch's news, written as its changes are stored, notified when it commits.
        var news = CommitNews.Writer()
        /// While a batch holds the write lock: how long it waited for it, and when it got it
        /// (`nanoseconds()`), for `onLockTimes`.
        var lock: (waited: Int64, since: Int64)?
    }

    /// Connects and migrates the database to the current schema. Refuses a database migrated by a
    /// newer Herald. `lockWait` bounds how long a batch waits for the write lock, and how long any
    /// session of a replica may sit in a transaction without a word (see `settings`).
    public init(url: String, lockWait: Duration = PostgresStore.lockWait) throws(StoreError) {
        let connection = try PostgresConnection(url)
        self.url = url
        settings = Self.settings(lockWait: lockWait)
        location = connection.location
        try connection.execute(settings)
        try PostgresMigrations.migrate(connection)
        seal = ChannelSeal(key: try Self.channelKey(connection))
        self.connection = Lock(State(connection: connection, seal: seal))
    }

    /// Proves to the other replicas that what this one notifies comes from a replica (`ChannelSeal`).
    public let seal: ChannelSeal

    /// The replicas' shared key, in a table only Herald's role may read: made by the first replica.
    private static func channelKey(_ connection: PostgresConnection) throws(StoreError) -> [UInt8] {
        try connection.query("INSERT INTO herald_channel_key (key) VALUES ($1) ON CONFLICT DO NOTHING", [.text(ChannelSeal.newKey())])
        guard let text = try connection.text("SELECT key FROM herald_channel_key"), let key = ChannelSeal.key(hex: text) else {
            throw StoreError("the replicas' channel key in herald_channel_key does not read", kind: .corrupt)
        }
        return key
    }

    /// Runs `body` with the connection, connecting again first if it broke. Inside a batch a broken
    /// connection is not replaced: the batch's transaction went with it.
    private func use<T>(_ body: (inout State) throws(StoreError) -> T) throws(StoreError) -> T {
        try connection.withLock { state throws(StoreError) -> T in
            defer {
                connected.store(state.connection.isConnected, ordering: .relaxed)
                seen.store(state.seenRevision, ordering: .relaxed)
            }
            if !state.inBatch, try state.connection.reconnectIfBroken() {
                try state.connection.execute(settings)
            }
            return try body(&state)
        }
    }

    /// Opens the batch's transaction, waits for the database's write lock, and returns the sequence
    /// committed (by any replica) so far: one round trip. When the listener heard of a commit this
    /// store has not seen, or of another replica's within the last second, the same round trip reads
    /// what was missed (the events, and the records,
    /// removals, auctions and bids changed), for `events(after:)` and `missedChanges()`. The batch's
    /// changes are then pipelined (sent without waiting for their answers), and its commit waits once
    /// for all of them.
    @discardableResult
    public func beginBatch() throws(StoreError) -> BatchStart? {
        try use { state throws(StoreError) -> BatchStart? in
            let connection = state.connection
            takeInNews(&state)
            try connection.enterPipeline()
            let asked = Self.nanoseconds()
            do throws(StoreError) {
                try connection.send("BEGIN")
                try connection.send("SELECT pg_advisory_xact_lock($1)", [.int(Self.lockKey)])
                try connection.send("SELECT value, revision FROM herald_sequence")
                // The events after this sequence, and what changed since the revision seen, when read now.
                var prefetching: UInt64?
                let othersWriting = Self.milliseconds() - othersHeard.load(ordering: .relaxed) < Self.othersWriting
                // With news, what was missed is taken from it; read only when the news is known lost.
                let newsLost = takesNews && heardNews.withLock({ $0.missedBefore }) > state.seenRevision
                if let sequence = state.seenSequence, state.seenRevision >= 0, !takesNews || newsLost,
                   othersWriting || heardRevision.load(ordering: .relaxed) > state.seenRevision {
                    prefetching = sequence
                    let events = Self.eventsRead(after: sequence)
                    try connection.send(events.sql, events.parameters)
                    for statement in Self.missedReads(Missed(after: state.seenRevision, through: nil)) {
                        try connection.send(statement.sql, statement.parameters)
                    }
                }
                // At most once a second, how full PostgreSQL's notification queue is (read last).
                let readingQueue = Self.milliseconds() - queueRead.load(ordering: .relaxed) >= 1_000
                if readingQueue {
                    queueRead.store(Self.milliseconds(), ordering: .relaxed)
                    try connection.send("SELECT pg_notification_queue_usage()")
                }
                // While it waits for the lock, news of the commits before it is taken in as it comes.
                let answers = try connection.flush(wake: newsWake) { takeInNews(&state) }
                let granted = Self.nanoseconds()
                state.lock = (granted - asked, granted)
                if readingQueue, let usage = answers.last?.rows.first?[0].flatMap({ Double($0) }) {
                    carryNews.store(usage <= newsQueueLimit, ordering: .relaxed)
                }
                let row = answers[2].rows.first
                let committed = UInt64(row?[0] ?? "") ?? 0
                let revision = Int64(row?[1] ?? "") ?? 0
                if revision > state.seenRevision, takesNews, prefetching == nil { awaitNews(through: revision, &state) }
                let behind = revision != state.seenRevision
                state.missedSince = behind ? state.seenRevision : -1
                state.prefetched = nil
                if prefetching != nil { prefetches.add(1, ordering: .relaxed) }
                if behind, let prefetching {
                    // Read from the revision seen when it was sent: what was taken in meanwhile is left out.
                    let (sequence, revision) = (state.seenSequence ?? 0, state.seenRevision)
                    state.prefetched = (prefetching, answers[3].rows.map(Self.event).filter { $0.id > sequence },
                                        Self.changes(Array(answers[4...]), after: revision))
                }
                state.seenRevision = revision
                state.seenSequence = committed
                state.inBatch = true
                state.batchSequence = nil
                state.batchWrote = false
                state.news.reset()
                return BatchStart(committed: committed, behind: behind)
            } catch {
                Self.abandon(connection)
                lockReleased(&state)
                throw error
            }
        }
    }

    /// Commits the batch: the sequence row and the notification after its changes, then `COMMIT`, and
    /// one wait for the answers to all of it. If any of its statements failed, none of it is stored.
    public func commitBatch() throws(StoreError) {
        try use { state throws(StoreError) in
            guard state.inBatch else { return }
            let connection = state.connection
            defer {
                state.inBatch = false
                state.batchSequence = nil
                state.batchWrote = false
                lockReleased(&state)
            }
            do throws(StoreError) {
                if let failure = connection.takeFailure() { throw failure }
                // The write lock is held since the batch began, so the revision it commits is the next.
                let revision = state.batchWrote ? state.seenRevision + 1 : state.seenRevision
                if state.batchWrote {
                    committing.store(revision, ordering: .relaxed)
                    let payloads = carriesNews ? state.news.payloads(revision: revision) : [String(revision)]
                    try connection.send(Self.advance(to: state.batchSequence, revision: revision,
                                                     notifying: payloads.map { state.seal.sealNews($0, channel: Self.channel) }))
                }
                try connection.send("COMMIT")
                try connection.flush()
                connection.exitPipeline()
                state.seenRevision = revision
                if let sequence = state.batchSequence { state.seenSequence = sequence }
                state.prefetched = nil
            } catch {
                Self.abandon(connection)
                // A COMMIT whose answer was lost may have committed: the next batch reads what is there.
                state.seenRevision = -1
                state.seenSequence = nil
                state.prefetched = nil
                committing.store(-1, ordering: .relaxed)
                wakeAfterFailure.withLock { $0 }?.run()
                throw error
            }
        }
    }

    public func rollbackBatch() {
        connection.withLock { state in
            guard state.inBatch else { return }
            Self.abandon(state.connection)
            lockReleased(&state)
            state.inBatch = false
            state.batchSequence = nil
            state.prefetched = nil
            // Memory may not have taken in what this batch found: the next one reads everything.
            state.seenRevision = -1
            state.seenSequence = nil
        }
    }

    /// Rolls back the batch's transaction, if the connection is up, and leaves pipeline mode.
    private static func abandon(_ connection: PostgresConnection) {
        if connection.isConnected { _ = try? connection.query("ROLLBACK") }
        connection.exitPipeline()
    }

    /// PostgreSQL synced its log when it acknowledged the commit.
    public func syncLog() throws(StoreError) {}

    /// Everything the store holds, as of one moment: outside a batch the reads share one snapshot (a
    /// read-only repeatable-read transaction), so the sequence, the records and the events agree while
    /// other replicas commit; inside a batch the write lock keeps them from committing.
    public func load(eventLimit: Int) throws(StoreError) -> StoredState {
        try use { state throws(StoreError) -> StoredState in
            let connection = state.connection
            let ownTransaction = !state.inBatch
            if ownTransaction { try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
            do throws(StoreError) {
                var stored = StoredState()
                let row = try connection.query("SELECT value, revision FROM herald_sequence").rows.first
                stored.lastSequence = UInt64(row?[0] ?? "") ?? 0
                let answers = try Self.read([Self.records(changed: nil)] + Self.auctions(changed: nil), connection)
                stored.records = Self.records(answers[0])
                stored.auctions = Self.auctions(answers[1], bids: answers[2])
                let events = try connection.query("SELECT id, topic, name, data, tags, at FROM herald_events ORDER BY id DESC LIMIT $1",
                                                  [.int(Int64(max(eventLimit, 0)))])
                stored.events = events.rows.reversed().map(Self.event)
                if ownTransaction { try connection.execute("COMMIT") }
                state.seenSequence = stored.lastSequence
                state.seenRevision = Int64(row?[1] ?? "") ?? -1
                return stored
            } catch {
                if ownTransaction, connection.isConnected { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    public func missedChanges() throws(StoreError) -> StoredChanges? {
        try use { state throws(StoreError) -> StoredChanges? in
            guard state.inBatch, state.missedSince >= 0 else { return nil }
            if let prefetched = state.prefetched { return prefetched.changes }
            // One round trip for the four reads.
            let missed = Missed(after: state.missedSince, through: state.seenRevision)
            return Self.changes(try Self.read(Self.missedReads(missed), state.connection))
        }
    }

    typealias Statement = PostgresConnection.Statement

    public func commit(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?) throws(StoreError) {
        try use { state throws(StoreError) in
            if state.inBatch { state.news.add(event: event, records: records, auction: auction, bid: bid) }
            try Self.change(&state, event: event?.id) { revision in
                Self.statements(event: event, records: records, auction: auction, bid: bid, revision: revision)
            }
        }
    }

    /// Stores one change, whose statements `statements` makes for the revision their transaction
    /// commits (the rows they write carry it; the write lock is held, so no other replica takes it
    /// meanwhile). In a batch, they are queued in the batch's pipeline, all or (when one cannot be sent)
    /// none, and answered when the batch commits: a change that fails there fails its whole batch.
    /// Outside a batch, the change is a transaction of its own that takes the write lock and moves the
    /// sequence and revision; if it fails, what it wrote is undone.
    private static func change(_ state: inout State, event: UInt64?, _ statements: (Int64) -> [Statement]) throws(StoreError) {
        let connection = state.connection
        if state.inBatch {
            try connection.send(statements(state.seenRevision + 1))
            state.batchWrote = true
            if let event { state.batchSequence = event }
            return
        }
        try connection.execute("BEGIN")
        do throws(StoreError) {
            try connection.query("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
            let committing = (Int64(try connection.text("SELECT revision FROM herald_sequence") ?? "") ?? 0) + 1
            let notified = state.seal.sealNews(String(committing), channel: channel)
            for statement in statements(committing) + advance(to: event, revision: committing, notifying: [notified]) {
                try connection.query(statement.sql, statement.parameters)
            }
            try connection.execute("COMMIT")
            // Only when nothing came between: otherwise the next batch must still read what others
            // committed before this change (it then reads this one too, harmlessly).
            if state.seenRevision == committing - 1 {
                state.seenRevision = committing
                if let event { state.seenSequence = event }
            }
        } catch {
            // A COMMIT whose answer was lost may have committed: read what is there next.
            state.seenRevision = -1
            state.seenSequence = nil
            if connection.isConnected { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    @discardableResult
    public func prune(keep: Int, before: Date?) throws(StoreError) -> UInt64 {
        try use { state throws(StoreError) -> UInt64 in
            let connection = state.connection
            let newest = UInt64(try connection.text("SELECT max(id) FROM herald_events") ?? "") ?? 0
            try connection.query("DELETE FROM herald_events WHERE id <= (SELECT max(id) FROM herald_events) - $1", [.int(Int64(max(keep, 0)))])
            if let before {
                try connection.query("DELETE FROM herald_events WHERE at < $1", [.text(String(before.timeIntervalSince1970))])
            }
            try connection.query("DELETE FROM herald_answers WHERE at < $1",
                                 [.text(String(Date().timeIntervalSince1970 - KeptAnswer.keptSeconds))])
            return UInt64(try connection.text("SELECT min(id) FROM herald_events") ?? "") ?? newest + 1
        }
    }

    public func keep(_ answer: KeptAnswer) throws(StoreError) {
        try use { state throws(StoreError) in
            try Self.change(&state, event: nil) { _ in
                [("""
                    INSERT INTO herald_answers (key, fingerprint, status, headers, body, at) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
                        headers = excluded.headers, body = excluded.body, at = excluded.at
                    """, [.text(answer.key), .text(answer.fingerprint), .int(Int64(answer.status)), .text(KeptAnswer.encode(answer.headers)),
                          .bytes(answer.body), .text(String(answer.at.timeIntervalSince1970))])]
            }
        }
    }

    public func keptAnswer(for key: String) throws(StoreError) -> KeptAnswer? {
        try use { state throws(StoreError) -> KeptAnswer? in
            guard let row = try state.connection.query("SELECT fingerprint, status, headers, body, at FROM herald_answers WHERE key = $1",
                                                       [.text(key)]).rows.first else { return nil }
            return KeptAnswer(key: key, fingerprint: row[0] ?? "", status: Int(row[1] ?? "") ?? 0, headers: KeptAnswer.decode(row[2] ?? ""),
                              body: PostgresConnection.bytes(row[3]), at: Date(timeIntervalSince1970: Double(row[4] ?? "") ?? 0))
        }
    }

    public func events(after id: UInt64) throws(StoreError) -> [StoredEvent] {
        try use { state throws(StoreError) -> [StoredEvent] in
            if state.inBatch, let prefetched = state.prefetched, prefetched.after <= id { return prefetched.events.filter { $0.id > id } }
            let events = Self.eventsRead(after: id)
            return try state.connection.query(events.sql, events.parameters).rows.map(Self.event)
        }
    }

    public func eventCount() throws(StoreError) -> Int {
        try use { state throws(StoreError) -> Int in Int(try state.connection.text("SELECT count(*) FROM herald_events") ?? "0") ?? 0 }
    }

    public func unwritableReason() -> String? {
        connected.load(ordering: .relaxed) && listening.isSet ? nil : "the connection to PostgreSQL is lost"
    }

    /// The database's size (`pg_database_size`), read when the writer is not using the connection;
    /// otherwise the size read last time.
    public func sizeBytes() -> Int64? {
        let read: Int64?? = connection.withLockIfAvailable { state -> Int64? in
            guard !state.inBatch, state.connection.isConnected else { return nil }
            return (try? state.connection.text("SELECT pg_database_size(current_database())")).flatMap { $0.flatMap { Int64($0) } }
        }
        if let size = read ?? nil { lastSize.store(size, ordering: .relaxed) }
        let size = lastSize.load(ordering: .relaxed)
        return size >= 0 ? size : nil
    }
}
