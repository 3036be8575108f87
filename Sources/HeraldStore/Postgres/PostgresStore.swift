import Foundation
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
    let connection: Lock<State>
    /// Whether the connection was up when last used (readiness reads it without waiting for the writer).
    let connected = Atomic<Bool>(true)
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
    let committing = Atomic<Int64>(-1)

    /// Other replicas' news, as the listener heard it: parts of a revision's news still coming, and
    /// news whole, by revision, until the writer takes it in (or reads past it).
    struct Heard: Sendable {
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
    let heardNews = Lock(Heard())
    /// Signalled when news is whole: wakes a batch that waits for the lock, to take it in meanwhile.
    let newsWake: Int32 = cepoll_eventfd()
    /// The revisions taken in from news, not read back (tests tell the two ways apart by it).
    let newsTakenIn = Atomic<Int>(0)
    var revisionsTakenFromNews: Int { newsTakenIn.load(ordering: .relaxed) }
    /// News kept for at most this many revisions ahead of the writer; beyond, it is read back.
    static let heardLimit = 1_000

    /// PostgreSQL's notification queue empties only as fast as its slowest listener reads: a replica
    /// paused with its connection open (or any session that listens and sits in a transaction) holds
    /// it, and once it is full (8 GB) every commit fails. News (about 8 KB a batch, measured) fills it
    /// hundreds of times faster than bare revisions. Three replicas writing as fast as they can leave
    /// at most one of its 8 KB pages unread (measured twice a second), so more than 8 means a listener
    /// stopped reading: then (read at most once a second, in a batch's first round trip) commits
    /// notify their revision alone, and the others read what they committed. A test gives one below
    /// zero (`init(url:lockWait:newsQueueLimit:)`).
    let newsQueueLimit: Double
    public static let newsQueueLimit = 8.0 * 8_192 / (8.0 * 1_024 * 1_024 * 1_024)
    /// Whether commits carry their news now (false while the queue is above `newsQueueLimit`).
    let carryNews = Atomic<Bool>(true)
    var carriesNews: Bool { carryNews.load(ordering: .relaxed) }
    /// When the queue's use was last read (`milliseconds()`).
    let queueRead = Atomic<Int64>(.min / 2)

    deinit { if newsWake >= 0 { close(newsWake) } }

    /// The longest a batch that has the lock waits for the news of the revisions it found committed
    /// (its predecessor's commit, heard a moment after the lock came free), before it reads them.
    static let newsWait: Int32 = 20

    /// What the listener wakes; also woken when a commit fails, since another replica's commit of
    /// the same revision may then have been taken for this store's own.
    let wakeAfterFailure = Lock<Wake?>(nil)
    struct Wake: Sendable {
        let run: @Sendable () -> Void
    }

    /// Told, as each batch ends, how long it waited for the write lock and how long it held it (metrics).
    public typealias LockTimes = @Sendable (_ waited: Duration, _ held: Duration) -> Void
    let lockTimes: LockTimes?

    /// A monotonic clock in nanoseconds.
    static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The revision this store last read or wrote (`State.seenRevision`, for the listener's thread).
    let seen = Atomic<Int64>(-1)
    /// The newest revision the listener heard of: when it is ahead of the one seen, the next batch
    /// reads what it missed in the round trip that takes the lock.
    let heardRevision = Atomic<Int64>(-1)
    /// When the listener last heard of another replica's commit (`milliseconds()`). Within a second of
    /// it, every batch reads what it may have missed with its lock: a batch that waits for the lock
    /// usually waits for another replica's commit, which it cannot have heard of when it asked.
    let othersHeard = Atomic<Int64>(.min / 2)
    static let othersWriting: Int64 = 1_000

    /// A monotonic clock in milliseconds.
    static func milliseconds() -> Int64 { nanoseconds() / 1_000_000 }
    /// How many batches read what they missed with their lock (tests tell the two ways apart by it).
    let prefetches = Atomic<Int>(0)
    var prefetchedBatches: Int { prefetches.load(ordering: .relaxed) }

    /// Whether the listener (if any) is connected.
    let listening = SharedFlag(true)
    /// The database's size at the last scrape that found the connection free.
    let lastSize = Atomic<Int64>(-1)

    /// The longest a batch waits for the write lock, and the longest a session sits idle in a
    /// transaction, by default. Contended batches wait milliseconds. A replica that stopped while it
    /// held the lock (a process paused, a machine gone quiet with its connection still open) would
    /// otherwise stop every replica's writes for good: PostgreSQL ends its session after this long,
    /// and a batch that waited this long is refused (503), not left hanging.
    public static let lockWait: Duration = .seconds(60)

    /// Set on every session of the store's: acknowledged commits are on disk (`synchronous_commit`),
    /// and neither a wait for a lock nor a transaction left idle lasts for ever.
    let settings: String

    static func settings(lockWait: Duration) -> String {
        let milliseconds = max(1, Int64((lockWait / .milliseconds(1)).rounded(.up)))
        return "SET synchronous_commit = on; SET lock_timeout = \(milliseconds); SET idle_in_transaction_session_timeout = \(milliseconds)"
    }

    /// The key of the advisory lock each batch takes, the database's write lock ("HERA").
    static let lockKey: Int64 = 0x4845_5241
    /// The channel commits notify, with the committed sequence as payload.
    static let channel = "herald"
    let url: String

    struct State: Sendable {
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
        /// (`nanoseconds()`), for `lockTimes`.
        var lock: (waited: Int64, since: Int64)?
    }

    /// Connects and migrates the database to the current schema. Refuses a database migrated by a
    /// newer Herald. `lockWait` bounds how long a batch waits for the write lock, and how long any
    /// session of a replica may sit in a transaction without a word (see `settings`).
    /// `lockTimes` is told how long each batch waited for the lock and held it.
    public convenience init(url: String, lockWait: Duration = PostgresStore.lockWait, lockTimes: LockTimes? = nil) throws(StoreError) {
        try self.init(url: url, lockWait: lockWait, newsQueueLimit: Self.newsQueueLimit, lockTimes: lockTimes)
    }

    init(url: String, lockWait: Duration = PostgresStore.lockWait, newsQueueLimit: Double, lockTimes: LockTimes? = nil) throws(StoreError) {
        self.newsQueueLimit = newsQueueLimit
        self.lockTimes = lockTimes
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
    static func channelKey(_ connection: PostgresConnection) throws(StoreError) -> [UInt8] {
        try connection.query("INSERT INTO herald_channel_key (key) VALUES ($1) ON CONFLICT DO NOTHING", [.text(ChannelSeal.newKey())])
        guard let text = try connection.text("SELECT key FROM herald_channel_key"), let key = ChannelSeal.key(hex: text) else {
            throw StoreError("the replicas' channel key in herald_channel_key does not read", kind: .corrupt)
        }
        return key
    }

    /// Runs `body` with the connection, connecting again first if it broke. Inside a batch a broken
    /// connection is not replaced: the batch's transaction went with it.
    func use<T>(_ body: (inout State) throws(StoreError) -> T) throws(StoreError) -> T {
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

    /// PostgreSQL synced its log when it acknowledged the commit.
    public func syncLog() throws(StoreError) {}

    typealias Statement = PostgresConnection.Statement

}
