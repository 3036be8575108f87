/// PostgreSQL's schema, one named step at a time. A step never changes once released; the database
/// keeps the names of those it ran (`herald_migrations`), so a step is found by name, not position.
enum PostgresMigrations {
    static let all = [
        Migration("0001-events-records-auctions", initial), Migration("0002-kept-answers", answers), Migration("0003-revisions", revisions),
        Migration("0004-bid-revisions", bidRevisions), Migration("0005-channel-key", channelKey),
        Migration("0006-auction-currency", auctionCurrency), Migration("0007-revocations", revocations7),
    ]

    /// An administrator's revocations of tokens (`StoredRevocation`), kept until they run out.
    static let revocations7 = """
        CREATE TABLE herald_revocations (
            key text PRIMARY KEY,
            issued_before double precision,
            until double precision NOT NULL
        );
        """

    /// An auction is priced in a currency. Those from before were shown in dollars.
    static let auctionCurrency = "ALTER TABLE herald_auctions ADD COLUMN currency text NOT NULL DEFAULT 'dollar';"

    /// The key that seals the replicas' notifications (`ChannelSeal`): readable by Herald's role (the
    /// table's owner) and by no other that is not granted it.
    static let channelKey = """
        CREATE TABLE herald_channel_key (
            single boolean PRIMARY KEY DEFAULT true CHECK (single),
            key text NOT NULL
        );
        REVOKE ALL ON herald_channel_key FROM PUBLIC;
        """

    /// Each bid carries the revision that wrote it too: a replica catching up reads the bids it missed,
    /// not every bid of each auction that changed. Bids from before have revision 0, which no catch-up
    /// asks for; a replica that finds an auction's bids do not add up reads everything once.
    static let bidRevisions = """
        ALTER TABLE herald_bids ADD COLUMN revision bigint NOT NULL DEFAULT 0;
        CREATE INDEX herald_bids_revision ON herald_bids (revision);
        """

    /// Each record and auction carries the revision that last wrote it, and a removed record leaves
    /// its revision behind: replicas catch up by what changed, not by reading everything.
    static let revisions = """
        ALTER TABLE herald_records ADD COLUMN revision bigint NOT NULL DEFAULT 0;
        CREATE INDEX herald_records_revision ON herald_records (revision);
        ALTER TABLE herald_auctions ADD COLUMN revision bigint NOT NULL DEFAULT 0;
        CREATE INDEX herald_auctions_revision ON herald_auctions (revision);
        CREATE TABLE herald_removals (
            kind text NOT NULL,
            id text NOT NULL,
            revision bigint NOT NULL,
            PRIMARY KEY (kind, id)
        );
        CREATE INDEX herald_removals_revision ON herald_removals (revision);
        """

    /// The key of the transaction lock two Heralds starting at once migrate under ("MIGR").
    static let lockKey: Int64 = 0x4D49_4752

    /// Runs the steps the database has not run, in one transaction. Refuses a database that ran a
    /// step this Herald does not know (a newer Herald migrated it).
    static func migrate(_ connection: PostgresConnection) throws(StoreError) {
        try connection.execute("BEGIN")
        do throws(StoreError) {
            try connection.query("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS herald_migrations (
                    name text PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let applied = try connection.query("SELECT name FROM herald_migrations").rows.compactMap { $0.first ?? nil }
            for step in try all.pending(applied: applied, in: connection.location) {
                try connection.execute(step.sql)
                try connection.query("INSERT INTO herald_migrations (name) VALUES ($1)", [.text(step.name)])
            }
            try connection.execute("COMMIT")
        } catch {
            if connection.isConnected { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    static let answers = """
        CREATE TABLE herald_answers (
            key text PRIMARY KEY,
            fingerprint text NOT NULL,
            status integer NOT NULL,
            headers text NOT NULL,
            body bytea NOT NULL,
            at double precision NOT NULL
        );
        CREATE INDEX herald_answers_at ON herald_answers (at);
        """

    static let initial = """
        CREATE TABLE herald_sequence (
            single boolean PRIMARY KEY DEFAULT true CHECK (single),
            value bigint NOT NULL,
            revision bigint NOT NULL
        );
        INSERT INTO herald_sequence (value, revision) VALUES (0, 0);
        CREATE TABLE herald_events (
            id bigint PRIMARY KEY,
            topic text NOT NULL,
            name text NOT NULL,
            data bytea NOT NULL,
            tags text NOT NULL,
            at double precision NOT NULL
        );
        CREATE INDEX herald_events_at ON herald_events (at);
        CREATE TABLE herald_records (
            kind text NOT NULL,
            id text NOT NULL,
            document bytea NOT NULL,
            PRIMARY KEY (kind, id)
        );
        CREATE TABLE herald_auctions (
            id text PRIMARY KEY,
            item text NOT NULL,
            starting_price bigint NOT NULL,
            created_at text NOT NULL,
            status text NOT NULL,
            countdown_seconds integer NOT NULL,
            deadline text,
            winner text,
            closed_at text
        );
        CREATE TABLE herald_bids (
            auction_id text NOT NULL,
            number integer NOT NULL,
            bidder text NOT NULL,
            amount bigint NOT NULL,
            at text NOT NULL,
            PRIMARY KEY (auction_id, number)
        );
        """
}
