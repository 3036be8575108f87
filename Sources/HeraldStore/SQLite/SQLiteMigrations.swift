/// The embedded store's schema, one named step at a time. The database keeps the names of the steps
/// it ran (`migrations`), so a step is found by name, not position, as in GRDB's `DatabaseMigrator`.
/// `user_version` still counts the steps, so a Herald from before the names refuses a newer database.
enum SQLiteMigrations {
    static let all = [
        Migration("0001-events-records", version1), Migration("0002-auctions-bids", version2),
        Migration("0003-kept-answers", version3), Migration("0004-events-without-time-index", version4),
        Migration("0005-sequence-from-events", version5), Migration("0006-auction-currency", version6),
        Migration("0007-revocations", version7),
    ]

    /// An administrator's revocations of tokens (`StoredRevocation`), kept until they run out.
    static let version7 = """
        CREATE TABLE revocations (
            key TEXT PRIMARY KEY,
            issued_before REAL,
            until REAL NOT NULL
        ) WITHOUT ROWID
        """

    /// An auction is priced in a currency. Those from before were shown in dollars.
    static let version6 = "ALTER TABLE auctions ADD COLUMN currency TEXT NOT NULL DEFAULT 'dollar'"

    /// Runs the steps the database has not run, each in its own transaction with its name.
    static func migrate(_ connection: Connection, path: String) throws(StoreError) {
        let version = Int(try connection.text("PRAGMA user_version") ?? "0") ?? 0
        let named = try connection.text("SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'migrations'") != nil
        let applied: [String]
        if named {
            applied = try connection.column("SELECT name FROM migrations")
        } else {
            // A database from before the names: `user_version` counts the steps it ran.
            guard version <= all.count else { throw Migration.newer(path, ["schema version \(version)"]) }
            applied = all.prefix(version).map(\.name)
            try connection.transaction { () throws(StoreError) in
                try connection.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY) WITHOUT ROWID")
                for name in applied { try connection.execute("INSERT INTO migrations (name) VALUES ('\(name)')") }
            }
        }
        var count = applied.count
        for step in try all.pending(applied: applied, in: path) {
            count += 1
            try connection.transaction { () throws(StoreError) in
                try connection.execute(step.sql)
                try connection.execute("INSERT INTO migrations (name) VALUES ('\(step.name)')")
                try connection.execute("PRAGMA user_version = \(count)")
            }
        }
    }

    static let version1 =
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES ('sequence', 0);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            topic TEXT NOT NULL,
            name TEXT NOT NULL,
            data BLOB NOT NULL,
            tags TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX events_at ON events (at);
        CREATE TABLE records (
            kind TEXT NOT NULL,
            id TEXT NOT NULL,
            document BLOB NOT NULL,
            PRIMARY KEY (kind, id)
        ) WITHOUT ROWID;
        """

    /// Auctions get a row of their own and their bids a table: a bid appends one row instead of
    /// rewriting the auction with all its bids. Countdown ticks are no longer stored: the ones
    /// schema 1 kept are deleted (replay skips the gaps they leave).
    static let version2 = """
        CREATE TABLE auctions (
            id TEXT PRIMARY KEY,
            item TEXT NOT NULL,
            starting_price INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL,
            countdown_seconds INTEGER NOT NULL,
            deadline TEXT,
            winner TEXT,
            closed_at TEXT
        ) WITHOUT ROWID;
        CREATE TABLE bids (
            auction_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            bidder TEXT NOT NULL,
            amount INTEGER NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (auction_id, number)
        ) WITHOUT ROWID;
        INSERT INTO auctions (id, item, starting_price, created_at, status, countdown_seconds, deadline, winner, closed_at)
            SELECT id, json_extract(CAST(document AS TEXT), '$.item'), json_extract(CAST(document AS TEXT), '$.startingPrice'),
                json_extract(CAST(document AS TEXT), '$.createdAt'), json_extract(CAST(document AS TEXT), '$.status'),
                json_extract(CAST(document AS TEXT), '$.countdownSeconds'), json_extract(CAST(document AS TEXT), '$.deadline'),
                json_extract(CAST(document AS TEXT), '$.winner'), json_extract(CAST(document AS TEXT), '$.closedAt')
            FROM records WHERE kind = 'auction';
        INSERT INTO bids (auction_id, number, bidder, amount, at)
            SELECT records.id, CAST(json_extract(bid.value, '$.id') AS INTEGER), json_extract(bid.value, '$.bidder'),
                json_extract(bid.value, '$.amount'), json_extract(bid.value, '$.at')
            FROM records, json_each(CAST(records.document AS TEXT), '$.bids') AS bid
            WHERE records.kind = 'auction';
        DELETE FROM records WHERE kind = 'auction';
        DELETE FROM events WHERE name = 'tick';
        """

    /// Answers kept for `Idempotency-Key` retries.
    static let version3 = """
        CREATE TABLE answers (
            key TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            status INTEGER NOT NULL,
            headers TEXT NOT NULL,
            body BLOB NOT NULL,
            at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX answers_at ON answers (at);
        """

    /// Events are pruned by age from the oldest, in the order of their ids (`SQLiteStore.prune`), which
    /// needs no index on their time: every stored change wrote one for nothing.
    static let version4 = "DROP INDEX IF EXISTS events_at"

    /// From here the sequence is the newest event's id, and `meta` holds only the floor that pruning
    /// writes before it deletes (`SQLiteStore.load`): commits no longer rewrite the counter. A Herald from
    /// before would read a stale counter and give out ids again, so this step is what makes it refuse
    /// the database. The counter is brought up to date once, here.
    static let version5 = """
        UPDATE meta SET value = max(value, coalesce((SELECT max(id) FROM events), 0)) WHERE key = 'sequence'
        """

}
