import CSQLite
public import Foundation
import HeraldJSON
import HeraldThreads
import Synchronization

/// Herald's embedded store: one SQLite file in WAL mode holding the domain's records and the event
/// log with its sequence. Each mutation is one transaction: its records and its event commit together.
public final class SQLiteStore: Store {
    public static let fileName = "herald.sqlite3"

    public let path: String
    public var location: String { path }
    public let isShared = false
    /// How hard a commit insists on the disk: with `.full`, the writer calls `syncLog()` once for each
    /// group of commits before any of them is acknowledged.
    public let synchronous: Synchronous
    /// Internal, not private: tests set pragmas on it (a page limit, to fill the store).
    let connection: Lock<Connection>
    let lockFile: Int32
    /// Copies the log into the database off the writer's thread (`tidy`).
    let checkpointer: Checkpointer
    /// The log's length at the last checkpoint asked of the checkpointer.
    let logRequests = Lock(0)
    /// The log's length past which the writer checkpoints itself.
    let ownCheckpointPages: Int
    /// The write-ahead log, opened for `syncLog()`: its descriptor and inode.
    let log = Lock<(descriptor: Int32, inode: UInt)?>(nil)

    /// Before SQLite's first use: it need not count memory (a global mutex at every allocation).
    static let configured: Bool = csqlite_stop_counting_memory() == SQLITE_OK

    /// Opens (creating if needed) the store in `directory`, migrating it to the current schema.
    /// Refuses a directory it cannot write, a file that is not a Herald database, a database from a
    /// newer Herald, and a directory another Herald has open.
    public init(directory: String, synchronous: Synchronous = .normal, ownCheckpointPages: Int = 8_000) throws(StoreError) {
        _ = Self.configured
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError("cannot create the data directory \(directory): \(error.localizedDescription)")
        }
        guard access(directory, W_OK) == 0 else { throw StoreError("the data directory \(directory) is not writable") }
        let lockPath = (directory as NSString).appendingPathComponent("herald.lock")
        lockFile = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lockFile >= 0 else { throw StoreError("cannot create \(lockPath): \(String(cString: strerror(errno)))") }
        guard Self.lock(lockFile) else {
            close(lockFile)
            throw StoreError("another Herald is using the data directory \(directory)")
        }
        path = (directory as NSString).appendingPathComponent(Self.fileName)
        self.synchronous = synchronous
        self.ownCheckpointPages = ownCheckpointPages
        checkpointer = Checkpointer(path: path)
        do {
            let connection = try Connection(path: path)
            try Self.prepare(connection, path: path)
            self.connection = Lock(connection)
        } catch {
            close(lockFile)
            throw error
        }
    }

    /// Takes the directory's lock, waiting up to a quarter of a second for it: a Herald that has just
    /// stopped may still hold it for a moment, and so may a process being started by this one's
    /// (between its fork and its exec, it shares the open lock file: seen in the tests, which start
    /// `python3` beside stores being reopened).
    static func lock(_ file: Int32) -> Bool {
        for _ in 0..<25 {
            if flock(file, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK || errno == EINTR else { return false }
            usleep(10_000)
        }
        return false
    }

    deinit {
        // Before the writer's connection closes: the last to close copies the log and removes it.
        checkpointer.stop()
        if let log = log.withLock({ $0 }) { close(log.descriptor) }
        close(lockFile)
    }

    /// Group commit: the changes stored from now until `commitBatch()` share one transaction, and a
    /// change that fails undoes only its own writes (`Connection.transaction`). Writing the log once for
    /// the whole batch is what makes a batch cheaper than its changes one by one.
    /// Only this Herald writes the file (it holds the directory's lock): nothing to return.
    @discardableResult
    public func beginBatch(news: NewsTaker?) throws(StoreError) -> BatchStart? {
        try connection.withLock { connection throws(StoreError) in try connection.beginBatch() }
        return nil
    }

    /// Commits the batch opened by `beginBatch()`. If the commit fails, none of the batch is stored.
    public func commitBatch() throws(StoreError) {
        // The tests' hooks, compiled into debug builds only: a release commit takes no lock for them.
        #if DEBUG
        beforeNextCommit.withLock { hook in
            defer { hook = nil }
            return hook
        }?.run()
        #endif
        try connection.withLock { connection throws(StoreError) in
            #if DEBUG
            if failNextCommit.withLock({ failing in
                defer { failing = false }
                return failing
            }) {
                connection.rollbackBatch()
                throw StoreError("database or disk is full (injected by a test)", code: SQLITE_FULL)
            }
            #endif
            try connection.commitBatch()
        }
    }

    public func rollbackBatch() {
        connection.withLock { $0.rollbackBatch() }
    }

    /// SQLite's checkpoint, which it would run inside a commit once the log passed 1,000 pages: now on
    /// the checkpointer's thread, asked for after the batch's clients are answered, at each 1,000 more
    /// pages. The log starts again from its beginning only at a commit that finds all of it copied, which
    /// a writer that never pauses may not give the checkpointer; past `ownCheckpointPages` the writer
    /// copies the rest itself, here, and waits for it (once every `ownCheckpointPages`, not every 1,000).
    public func tidy() {
        let pages = connection.withLock { $0.logPageCount }
        let due = logRequests.withLock { requested -> Bool in
            if pages < requested { requested = 0 }  // the log started again
            guard pages >= requested + 1_000 else { return false }
            requested = pages
            return true
        }
        if pages >= ownCheckpointPages {
            if connection.withLock({ $0.checkpoint() }) { logRequests.withLock { $0 = 0 } }
        } else if due {
            checkpointer.request()
        }
    }

    /// Tests set this to make the next batch commit fail as a full disk would, after every change in
    /// the batch was written (nothing else can make COMMIT alone fail on demand).
    let failNextCommit = Lock(false)

    /// Tests set this to run once before the next batch commits, with every change of the batch made
    /// (a closure kept in a struct: see `Lock`).
    let beforeNextCommit = Lock<Hook?>(nil)

    struct Hook: Sendable {
        let run: @Sendable () -> Void
    }

    /// Makes every commit so far durable: one `fdatasync` of the write-ahead log for all of them. This
    /// is group commit: SQLite runs with `synchronous=NORMAL` (a commit is written to the log, not
    /// synced; SQLite still syncs the log before each checkpoint), and the writer calls this once per
    /// batch before acknowledging any change in it: what `synchronous=FULL` gives each commit, paid
    /// once for all of them.
    public func syncLog() throws(StoreError) {
        try log.withLock { log throws(StoreError) in
            let logPath = path + "-wal"
            var status = stat()
            guard stat(logPath, &status) == 0 else {
                // No log: nothing was written since the last checkpoint removed it.
                if errno == ENOENT { return }
                throw StoreError("cannot find the write-ahead log \(logPath): \(String(cString: strerror(errno)))")
            }
            if let open = log, open.inode != UInt(status.st_ino) {
                close(open.descriptor)
                log = nil
            }
            if log == nil {
                let descriptor = open(logPath, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else {
                    throw StoreError("cannot open the write-ahead log \(logPath): \(String(cString: strerror(errno)))")
                }
                log = (descriptor, UInt(status.st_ino))
            }
            guard let descriptor = log?.descriptor, fdatasync(descriptor) == 0 else {
                throw StoreError("cannot sync the write-ahead log \(logPath): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func prepare(_ connection: Connection, path: String) throws(StoreError) {
        do {
            // Short: every change waits behind the writer's current one, so a lock held by another
            // process must cost a quick 503, not seconds of every writer's time.
            try connection.execute("PRAGMA busy_timeout = 200")
            _ = try connection.text("PRAGMA user_version")
        } catch {
            throw StoreError("\(path) is not a Herald database (\(error.description))")
        }
        guard try connection.text("PRAGMA quick_check") == "ok" else {
            throw StoreError("\(path) is corrupt (PRAGMA quick_check failed): restore it from a backup")
        }
        guard try connection.text("PRAGMA journal_mode = WAL")?.lowercased() == "wal" else {
            throw StoreError("\(path): cannot switch to WAL mode")
        }
        // NORMAL whatever `synchronous` is: with `.full` the writer syncs the log once per batch (`syncLog`).
        try connection.execute("PRAGMA synchronous = NORMAL")
        try SQLiteMigrations.migrate(connection, path: path)
        connection.countLogPages()
    }

    /// Everything needed at start: the sequence, the newest `eventLimit` events and every record.
    public func load(eventLimit: Int) throws(StoreError) -> StoredState {
        try connection.withLock { connection throws(StoreError) in
            var state = StoredState()
            // The newest event's id, or the floor `prune` wrote before deleting the newest.
            state.lastSequence = UInt64(try connection.text("""
                SELECT max(coalesce((SELECT value FROM meta WHERE key = 'sequence'), 0), coalesce((SELECT max(id) FROM events), 0))
                """).flatMap { UInt64($0) } ?? 0)
            let records = try connection.statement("SELECT kind, id, document FROM records ORDER BY kind, id")
            while try records.step() {
                state.records[records.text(0) ?? "", default: []].append((records.text(1) ?? "", records.blob(2)))
            }
            let auctions = try connection.statement("""
                SELECT id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at, currency
                FROM auctions ORDER BY length(id), id
                """)
            var index: [String: Int] = [:]
            while try auctions.step() {
                let id = auctions.text(0) ?? ""
                index[id] = state.auctions.count
                state.auctions.append(StoredAuction(
                    id: id, item: auctions.text(1) ?? "", startingPrice: auctions.int(2), currency: auctions.text(9) ?? "",
                    createdAt: auctions.text(3) ?? "",
                    status: auctions.text(4) ?? "", countdownSeconds: Int(auctions.int(5)), deadline: auctions.text(6),
                    winner: auctions.text(7), closedAt: auctions.text(8)))
            }
            let bids = try connection.statement("SELECT auction_id, number, bidder, amount, at FROM bids ORDER BY auction_id, number")
            while try bids.step() {
                guard let position = index[bids.text(0) ?? ""] else { continue }
                state.auctions[position].bids.append(StoredBid(number: Int(bids.int(1)), bidder: bids.text(2) ?? "",
                                                               amount: bids.int(3), at: bids.text(4) ?? ""))
            }
            let events = try connection.statement("SELECT id, topic, name, data, tags, at FROM events ORDER BY id DESC LIMIT ?")
            try events.bind(1, Int64(max(eventLimit, 0)))
            while try events.step() {
                let tags = events.text(4).map(Self.tags(from:)) ?? []
                state.events.append(StoredEvent(id: UInt64(events.int(0)), topic: events.text(1) ?? "", name: events.text(2) ?? "",
                                                data: events.blob(3), tags: tags, at: Date(timeIntervalSince1970: events.double(5))))
            }
            state.events.reverse()
            return state
        }
    }

    /// Commits one mutation: its event (if any), its records, and an auction's fields with the bid it
    /// added (one UPDATE and one INSERT, whatever the bids before). The event's id is the sequence:
    /// `load` takes the newest stored, so a commit writes no counter of its own (which cost a batch one
    /// page more in the log, a quarter of its pages), and `prune` writes the floor before it deletes.
    public func commit(event: StoredEvent?, records: [RecordChange], auction: StoredAuction? = nil, bid: StoredBid? = nil) throws(StoreError) {
        try connection.withLock { connection throws(StoreError) in
            try connection.transaction { [connection] () throws(StoreError) in
                if let event {
                    let insert = try connection.statement("INSERT INTO events (id, topic, name, data, tags, at) VALUES (?, ?, ?, ?, ?, ?)")
                    try insert.bind(1, Int64(event.id))
                    try insert.bind(2, event.topic)
                    try insert.bind(3, event.name)
                    try insert.bind(4, event.data)
                    Self.tagsText(event.tags, into: &connection.tagsBuffer)
                    try insert.bindText(5, connection.tagsBuffer)
                    try insert.bind(6, event.at.timeIntervalSince1970)
                    try insert.run()
                }
                if let auction {
                    let upsert = try connection.statement("""
                        INSERT INTO auctions (id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at,
                            currency)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (id) DO UPDATE SET status = excluded.status, deadline = excluded.deadline,
                            winner = excluded.winner, closed_at = excluded.closed_at
                        """)
                    try upsert.bind(1, auction.id)
                    try upsert.bind(2, auction.item)
                    try upsert.bind(3, auction.startingPrice)
                    try upsert.bind(4, auction.createdAt)
                    try upsert.bind(5, auction.status)
                    try upsert.bind(6, Int64(auction.countdownSeconds))
                    try upsert.bind(7, auction.deadline)
                    try upsert.bind(8, auction.winner)
                    try upsert.bind(9, auction.closedAt)
                    try upsert.bind(10, auction.currency)
                    try upsert.run()
                    if let bid {
                        let insert = try connection.statement("INSERT INTO bids (auction_id, number, bidder, amount, at) VALUES (?, ?, ?, ?, ?)")
                        try insert.bind(1, auction.id)
                        try insert.bind(2, Int64(bid.number))
                        try insert.bind(3, bid.bidder)
                        try insert.bind(4, bid.amount)
                        try insert.bind(5, bid.at)
                        try insert.run()
                    }
                }
                for record in records {
                    if let document = record.document {
                        let upsert = try connection.statement(
                            "INSERT INTO records (kind, id, document) VALUES (?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET document = excluded.document")
                        try upsert.bind(1, record.kind)
                        try upsert.bind(2, record.id)
                        try upsert.bind(3, document)
                        try upsert.run()
                    } else {
                        let delete = try connection.statement("DELETE FROM records WHERE kind = ? AND id = ?")
                        try delete.bind(1, record.kind)
                        try delete.bind(2, record.id)
                        try delete.run()
                    }
                }
            }
        }
    }

}
