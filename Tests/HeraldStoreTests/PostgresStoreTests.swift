import HeraldThreads
import Foundation
import HeraldTestSupport
@testable import HeraldStore
import Synchronization
import Testing

/// The PostgreSQL store against a real PostgreSQL (`scripts/test` starts one; each test makes its own
/// database).
@Suite(.enabled(if: TestPostgres.adminURL != nil, "HERALD_TEST_POSTGRES names a PostgreSQL (scripts/test starts one)"))
struct PostgresStoreTests {
    func event(_ id: UInt64, topic: String = "units/a", at: Date = Date(timeIntervalSince1970: 1_000_000.25)) -> StoredEvent {
        StoredEvent(id: id, topic: topic, name: "unit", data: Array(#"{"topic":"\#(topic)","n":\#(id)}"#.utf8) + [0, 0xFF],
                    tags: ["delay", "line\nbreak"], at: at)
    }

    /// `store`'s listener, started, and how many times it has called: once when it connects, which
    /// this waits for. The caller stops it.
    func listening(_ store: PostgresStore) -> (listener: PostgresListener, heard: Lock<Int>) {
        let heard = Lock(0)
        let listener = store.listen { heard.withLock { $0 += 1 } }
        listener.start()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } >= 1 }, "once when it connects")
        return (listener, heard)
    }

    /// An event whose bytes are text, as Herald's are (news carries those).
    func textEvent(_ id: UInt64) -> StoredEvent {
        StoredEvent(id: id, topic: "auctions/1", name: "bid", data: Array(#"{"topic":"auctions/1","n":\#(id),"é":"€"}"#.utf8),
                    tags: ["was:status=open"], at: Date(timeIntervalSince1970: 1_000_000.125))
    }

    @Test func eventsRecordsAuctionsAndBidsRoundTripAcrossReopening() throws {
        let url = try TestPostgres.database()
        let auction = StoredAuction(id: "7", item: "Watch 'n' chain", startingPrice: 100, currency: "euro", createdAt: "2026-11-23T06:00:00Z",
                                    status: "open", countdownSeconds: 7, deadline: "2026-11-23T06:00:07Z", winner: nil, closedAt: nil)
        do {
            let store = try PostgresStore(url: url)
            try store.commit(event: event(1), records: [RecordChange(kind: "unit", id: "a", document: Array("{\"id\":\"a\"}".utf8))],
                             auction: nil, bid: nil)
            try store.commit(event: event(2, topic: "auctions/7"), records: [], auction: auction,
                             bid: StoredBid(number: 1, bidder: "ann", amount: 150, at: "2026-11-23T06:00:01Z"))
            try store.commit(event: event(3, topic: "auctions/7"), records: [RecordChange(kind: "unit", id: "a", document: nil)],
                             auction: auction, bid: StoredBid(number: 2, bidder: "bob", amount: 160, at: "2026-11-23T06:00:02Z"))
        }
        let state = try PostgresStore(url: url).load(eventLimit: 2)
        #expect(state.lastSequence == 3)
        #expect(state.events == [event(2, topic: "auctions/7"), event(3, topic: "auctions/7")], "the newest two, oldest first, bytes and tags as written")
        #expect(state.records["unit"] == nil, "the unit was deleted")
        #expect(state.auctions.map(\.id) == ["7"])
        #expect(state.auctions.first?.item == "Watch 'n' chain")
        #expect(state.auctions.first?.bids.map(\.bidder) == ["ann", "bob"])
        #expect(state.auctions.first?.bids.map(\.amount) == [150, 160])
    }

    /// A batch is one transaction whose changes are pipelined: nothing is visible before it commits. A
    /// change that cannot be sent (text with a NUL byte, which PostgreSQL cannot hold) is refused alone,
    /// and the batch goes on. A change PostgreSQL refuses is answered only at the commit, so it fails
    /// the whole batch, and none of the batch is stored.
    @Test func aBatchIsOneTransactionOfPipelinedChanges() throws {
        let url = try TestPostgres.database()
        let store = try PostgresStore(url: url)
        try store.beginBatch()
        try store.commit(event: event(1), records: [RecordChange(kind: "unit", id: "a", document: [1])], auction: nil, bid: nil)
        #expect(throws: StoreError.self, "PostgreSQL's text cannot hold a NUL byte") {
            try store.commit(event: event(2), records: [RecordChange(kind: "unit", id: "b\u{0}", document: [2])], auction: nil, bid: nil)
        }
        try store.commit(event: event(2), records: [], auction: nil, bid: nil)
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_events", on: url) == "0", "nothing is visible before the batch commits")
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == "0")
        try store.commitBatch()
        #expect(try TestPostgres.run("SELECT string_agg(id::text, ',' ORDER BY id) FROM herald_events", on: url) == "1,2")
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == "2")
        #expect(try TestPostgres.run("SELECT string_agg(id, ',') FROM herald_records", on: url) == "a", "the refused change wrote nothing")

        try store.beginBatch()
        try store.commit(event: event(3), records: [RecordChange(kind: "unit", id: "c", document: [3])], auction: nil, bid: nil)
        try store.commit(event: event(2), records: [], auction: nil, bid: nil)  // a second event 2 breaks the primary key
        #expect(throws: StoreError.self, "the refusal comes with the commit") { try store.commitBatch() }
        #expect(try TestPostgres.run("SELECT string_agg(id::text, ',' ORDER BY id) FROM herald_events", on: url) == "1,2")
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == "2")
        #expect(try TestPostgres.run("SELECT string_agg(id, ',') FROM herald_records", on: url) == "a", "nothing of the failed batch")

        try store.beginBatch()
        try store.commit(event: event(3), records: [], auction: nil, bid: nil)
        try store.commitBatch()
        #expect(try TestPostgres.run("SELECT value FROM herald_sequence", on: url) == "3", "the store goes on after a failed batch")
    }

    @Test func aFailedBatchCommitStoresNothing() throws {
        let url = try TestPostgres.database()
        let store = try PostgresStore(url: url)
        try store.commit(event: event(1), records: [], auction: nil, bid: nil)
        // A deferred trigger fails at COMMIT, as a full disk or a lost connection would.
        try TestPostgres.run("""
            CREATE FUNCTION refuse_two() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.id = 2 THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NEW; END $$;
            CREATE CONSTRAINT TRIGGER refuse_two AFTER INSERT ON herald_events DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION refuse_two();
            """, on: url)
        try store.beginBatch()
        try store.commit(event: event(2), records: [], auction: nil, bid: nil)
        let failure = #expect(throws: StoreError.self) { try store.commitBatch() }
        #expect(failure?.description.contains("refused at commit") == true, "\(String(describing: failure))")
        #expect(try store.load(eventLimit: 10).events.map(\.id) == [1])
        #expect(try store.load(eventLimit: 10).lastSequence == 1)
        try TestPostgres.run("DROP TRIGGER refuse_two ON herald_events", on: url)
        try store.commit(event: event(2), records: [], auction: nil, bid: nil)
        #expect(try store.load(eventLimit: 10).lastSequence == 2, "the store goes on after a failed batch")
    }

    /// Catching up by what changed: a batch that begins behind reads only the records, removals and
    /// auctions (with the bids it missed, and how many each has in all) other stores wrote since it last looked; one that never looked
    /// cannot tell, and one that is not behind has nothing to read.
    @Test func aBatchBehindReadsOnlyWhatTheOthersChanged() throws {
        let url = try TestPostgres.database()
        let (first, second) = (try PostgresStore(url: url), try PostgresStore(url: url))
        let auction = { (id: String) in
            StoredAuction(id: id, item: "Lot \(id)", startingPrice: 1, currency: "euro", createdAt: "2026-11-23T06:00:00Z", status: "open",
                          countdownSeconds: 60, deadline: nil, winner: nil, closedAt: nil)
        }
        try first.beginBatch()
        #expect(try first.missedChanges() == nil, "it never read the store: it cannot tell what it missed")
        try first.commit(event: event(1), records: [RecordChange(kind: "unit", id: "old", document: [1]),
                                                    RecordChange(kind: "unit", id: "gone", document: [2])],
                         auction: auction("1"), bid: StoredBid(number: 1, bidder: "ann", amount: 5, at: "2026-11-23T06:00:01Z"))
        try first.commit(event: nil, records: [], auction: auction("2"), bid: nil)
        try first.commitBatch()
        _ = try second.load(eventLimit: 0)  // the second has seen all that

        try first.beginBatch()
        try first.commit(event: event(2), records: [RecordChange(kind: "unit", id: "new", document: [3]),
                                                    RecordChange(kind: "unit", id: "gone", document: nil)],
                         auction: auction("1"), bid: StoredBid(number: 2, bidder: "bob", amount: 6, at: "2026-11-23T06:00:02Z"))
        try first.commitBatch()

        #expect(try second.beginBatch()?.behind == true)
        let changes = try #require(try second.missedChanges())
        #expect(changes.changed.records["unit"]?.map(\.id) == ["new"], "not 'old', which did not change")
        #expect(changes.removed.map { "\($0.kind)/\($0.id)" } == ["unit/gone"])
        #expect(changes.changed.auctions.map(\.id) == ["1"], "not auction 2, which did not change")
        #expect(changes.changed.auctions.first?.bids.map(\.bidder) == ["bob"], "only the bid it missed")
        #expect(changes.changed.auctions.first?.bidCount == 2, "and how many there are in all")
        try second.commitBatch()

        // Made again: the record is reported, and its earlier removal is not (it was seen).
        try first.beginBatch()
        try first.commit(event: nil, records: [RecordChange(kind: "unit", id: "gone", document: [4])], auction: nil, bid: nil)
        try first.commitBatch()
        try second.beginBatch()
        let again = try #require(try second.missedChanges())
        #expect(again.removed.isEmpty)
        #expect(again.changed.records["unit"]?.map(\.id) == ["gone"])
        #expect(again.changed.auctions.isEmpty)
        try second.commitBatch()
        try second.beginBatch()
        #expect(try second.missedChanges() == nil, "not behind: nothing to read")
        second.rollbackBatch()
    }

    /// Replicas: a batch holds the database's write lock from its start, so another store's batch
    /// waits for it to end, and then reads the sequence it committed.
    @Test func batchesOfTwoStoresTakeTurnsAndEachSeesTheOthersSequence() throws {
        let url = try TestPostgres.database()
        let (first, second) = (try PostgresStore(url: url), try PostgresStore(url: url))
        #expect(try first.beginBatch() == BatchStart(committed: 0, behind: true), "it never read the store")
        try first.commit(event: event(1), records: [], auction: nil, bid: nil)
        let secondBegan = Lock<BatchStart??>(nil)
        let thread = Thread {
            let committed = try? second.beginBatch()
            secondBegan.withLock { $0 = committed }
        }
        thread.start()
        // The second batch is seen waiting for the advisory lock in PostgreSQL, however late its thread started.
        let waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = "
            + "(SELECT oid FROM pg_database WHERE datname = current_database())"
        #expect(eventually(timeout: 60) { (try? TestPostgres.run(waiting, on: url)) == "1" }, "the second batch asks for the lock")
        #expect(secondBegan.withLock { $0 } == nil, "the second batch waits for the first")
        try first.commitBatch()
        #expect(eventually(timeout: 30) { secondBegan.withLock { $0 } != nil })
        #expect(secondBegan.withLock { $0 } == .some(.some(BatchStart(committed: 1, behind: true))), "and sees its sequence")
        #expect(try second.events(after: 0).map(\.id) == [1])
        try second.commit(event: event(2), records: [], auction: nil, bid: nil)
        try second.commitBatch()
        #expect(try first.beginBatch() == BatchStart(committed: 2, behind: true))
        first.rollbackBatch()
        #expect(try second.beginBatch() == BatchStart(committed: 2, behind: false), "nothing new since its own commit")
        // A change without an event (a new auction) moves the revision: the other store is behind.
        try second.commit(event: nil, records: [RecordChange(kind: "unit", id: "quiet", document: [1])], auction: nil, bid: nil)
        try second.commitBatch()
        #expect(try first.beginBatch() == BatchStart(committed: 2, behind: true))
        try first.commitBatch()
        #expect(try first.beginBatch() == BatchStart(committed: 2, behind: false), "an empty batch moves nothing")
        first.rollbackBatch()
    }

    /// A store's own commits are no news to its listener. Another's commit is: the next batch then
    /// reads what it missed in the round trip that takes the lock, the same events and changes a
    /// batch reads after it began (the count of such batches shows which way it went).
    @Test func aBatchThatHeardOfACommitReadsWhatItMissedWithItsLock() throws {
        let url = try TestPostgres.database()
        let (first, second) = (try PostgresStore(url: url), try PostgresStore(url: url))
        let auction = StoredAuction(id: "1", item: "Lot", startingPrice: 1, currency: "euro", createdAt: "2026-11-26T06:00:00Z", status: "open",
                                    countdownSeconds: 60, deadline: nil, winner: nil, closedAt: nil)
        try first.beginBatch()
        try first.commit(event: event(1), records: [RecordChange(kind: "unit", id: "a", document: [1])], auction: auction,
                         bid: StoredBid(number: 1, bidder: "ann", amount: 5, at: "2026-11-26T06:00:01Z"))
        try first.commitBatch()
        _ = try second.load(eventLimit: 0)
        let (listener, heard) = listening(second)
        defer { listener.stop() }
        #expect(heard.withLock { $0 } == 1, "once when it connects")

        try second.beginBatch()
        #expect(second.prefetchedBatches == 1, "once it connected, some may have been missed")
        try second.commit(event: event(2), records: [], auction: nil, bid: nil)
        try second.commitBatch()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(heard.withLock { $0 } == 1, "its own commit is no news")
        try second.beginBatch()
        #expect(second.prefetchedBatches == 1, "nor does the next batch read anything")
        try second.commitBatch()

        try first.beginBatch()
        #expect(first.prefetchedBatches == 0, "the first has no listener: it heard of nothing")
        try first.commit(event: event(3), records: [RecordChange(kind: "unit", id: "b", document: [2])], auction: auction,
                         bid: StoredBid(number: 2, bidder: "bob", amount: 6, at: "2026-11-26T06:00:02Z"))
        try first.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } == 2 }, "the other's commit is news")

        #expect(try second.beginBatch()?.behind == true)
        #expect(second.prefetchedBatches == 2, "it read what it missed with the lock")
        #expect(try second.events(after: 2).map(\.id) == [3])
        #expect(try second.events(after: 1).map(\.id) == [2, 3], "another start is read afresh")
        let changes = try #require(try second.missedChanges())
        #expect(changes.changed.records["unit"]?.map(\.id) == ["b"])
        #expect(changes.changed.auctions.map(\.id) == ["1"])
        #expect(changes.changed.auctions.first?.bids.map(\.bidder) == ["bob"])
        #expect(changes.changed.auctions.first?.bidCount == 2)
        try second.commitBatch()
    }

    /// News: a store whose writer takes in other stores' news (a `NewsTaker`) gets, from the listener,
    /// what another store's batch committed (its events, records, removals, auctions and bids), and
    /// takes it in before its next batch asks for the lock: that batch does not begin behind, and
    /// reads nothing back. A batch whose bytes are not text is notified without news, and read back.
    @Test func aStoreTakesInAnotherStoresCommitFromItsNewsWithoutReadingIt() throws {
        let url = try TestPostgres.database()
        let (writer, reader) = (try PostgresStore(url: url), try PostgresStore(url: url))
        let auction = StoredAuction(id: "1", item: "Lot ü", startingPrice: 1, currency: "euro", createdAt: "2026-11-26T06:00:00Z", status: "open",
                                    countdownSeconds: 60, deadline: "2999-01-01T00:00:00Z", winner: nil, closedAt: nil)
        func counted(_ auction: StoredAuction, _ count: Int) -> StoredAuction { var auction = auction; auction.bidCount = count; return auction }
        try writer.commit(event: textEvent(1), records: [RecordChange(kind: "unit", id: "gone", document: Array("{}".utf8))],
                          auction: nil, bid: nil)
        _ = try reader.load(eventLimit: 0)
        let taken = Lock<[(events: [StoredEvent], changes: StoredChanges)]>([])
        let takeIn: NewsTaker = { events, changes in
            taken.withLock { $0.append((events, changes)) }
            return .taken
        }
        let (listener, heard) = listening(reader)
        defer { listener.stop() }
        #expect(heard.withLock { $0 } == 1, "once when it connects")

        try writer.beginBatch()
        try writer.commit(event: textEvent(2), records: [RecordChange(kind: "unit", id: "a", document: Array(#"{"id":"a","x":"ß"}"#.utf8)),
                                                         RecordChange(kind: "unit", id: "gone", document: nil)],
                          auction: counted(auction, 1), bid: StoredBid(number: 1, bidder: "ann", amount: 5, at: "2026-11-26T06:00:01Z"))
        try writer.commit(event: textEvent(3), records: [], auction: counted(auction, 2),
                          bid: StoredBid(number: 2, bidder: "bob", amount: 6, at: "2026-11-26T06:00:02Z"))
        try writer.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } == 2 }, "the commit is heard")

        #expect(try reader.beginBatch(news: takeIn)?.behind == false, "the news was taken in before the batch asked for the lock")
        #expect(reader.revisionsTakenFromNews == 1)
        #expect(try reader.missedChanges() == nil, "nothing is read back")
        try reader.commitBatch()
        let news = taken.withLock { $0 }
        #expect(news.count == 1)
        #expect(news.first?.events == [textEvent(2), textEvent(3)], "the events, bytes, tags and time as committed")
        let changes = try #require(news.first?.changes)
        #expect(changes.changed.records["unit"]?.map(\.id) == ["a"])
        #expect(changes.changed.records["unit"]?.first?.document == Array(#"{"id":"a","x":"ß"}"#.utf8))
        #expect(changes.removed.map(\.id) == ["gone"])
        #expect(changes.changed.auctions.map(\.id) == ["1"])
        #expect(changes.changed.auctions.first?.item == "Lot ü")
        #expect(changes.changed.auctions.first?.deadline == "2999-01-01T00:00:00Z")
        #expect(changes.changed.auctions.first?.bids.map(\.bidder) == ["ann", "bob"], "every bid of the batch, in order")
        #expect(changes.changed.auctions.first?.bidCount == 2)

        // Bytes that are not text go without news: the reader reads the batch back with its lock.
        try writer.beginBatch()
        try writer.commit(event: event(4), records: [], auction: nil, bid: nil)
        try writer.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } == 3 })
        #expect(try reader.beginBatch(news: takeIn)?.behind == true)
        #expect(reader.revisionsTakenFromNews == 1, "nothing more was taken from news")
        #expect(try reader.events(after: 3) == [event(4)], "read back, bytes as written")
        try reader.commitBatch()
        #expect(taken.withLock { $0.count } == 1)
    }

    /// A replica that only streams takes in news between its batches, and asks for a batch that takes
    /// the lock only when news is missing. News that comes while it takes in the news before it (the
    /// listener is a thread of its own) is not missing: the listener wakes the writer for it.
    @Test func newsHeardWhileTakingInTheNewsBeforeItNeedsNoLock() throws {
        let url = try TestPostgres.database()
        let (writer, reader) = (try PostgresStore(url: url), try PostgresStore(url: url))
        try writer.commit(event: textEvent(1), records: [], auction: nil, bid: nil)
        _ = try reader.load(eventLimit: 0)
        let (listener, heard) = listening(reader)
        defer { listener.stop() }
        #expect(heard.withLock { $0 } == 1, "once when it connects")
        // A batch reads what came before the listener (its first revision is one it has seen).
        try reader.beginBatch()
        try reader.commitBatch()
        func commit(_ event: StoredEvent) throws {
            let before = heard.withLock { $0 }
            try writer.beginBatch()
            try writer.commit(event: event, records: [], auction: nil, bid: nil)
            try writer.commitBatch()
            #expect(eventually(timeout: 30) { heard.withLock { $0 } > before }, "the commit of \(event.id) is heard")
        }
        try commit(textEvent(2))
        let taken = Lock<[UInt64]>([])
        let caughtUp = reader.takeInNews { events, _ in
            // The next commit is heard while this one is taken in.
            if taken.withLock({ $0.isEmpty }) { try? commit(textEvent(3)) }
            taken.withLock { $0 += events.map(\.id) }
            return .taken
        }
        #expect(taken.withLock { $0 } == [2])
        #expect(caughtUp, "the next revision's news is whole: no batch needs the lock for it")
        #expect(reader.takeInNews { events, _ in taken.withLock { $0 += events.map(\.id) }; return .taken })
        #expect(taken.withLock { $0 } == [2, 3])
        #expect(reader.revisionsTakenFromNews == 2)

        // A revision heard without its news (bytes that are not text) takes a batch with the lock.
        try commit(event(4))
        #expect(!reader.takeInNews { _, _ in .taken }, "read back under the lock")
        #expect(reader.revisionsTakenFromNews == 2)
    }

    /// A batch that waits for the lock takes in, meanwhile, the news of a batch committed while it
    /// waited (the one before the holder's), and with the lock the holder's own, heard a moment after
    /// the lock came free: it begins caught up, and reads nothing back.
    @Test func aBatchWaitingForTheLockTakesInWhatIsCommittedMeanwhile() throws {
        let url = try TestPostgres.database()
        let (first, second, third) = (try PostgresStore(url: url), try PostgresStore(url: url), try PostgresStore(url: url))
        _ = try third.load(eventLimit: 0)
        let began = Atomic<Bool>(false)
        let taken = Lock<[(ids: [UInt64], waiting: Bool)]>([])
        let news: @Sendable ([StoredEvent], StoredChanges) -> NewsTaken = { events, _ in
            taken.withLock { $0.append((events.map(\.id), !began.load(ordering: .relaxed))) }
            return .taken
        }
        let (listener, _) = listening(third)
        defer { listener.stop() }
        let waiting = { (try? TestPostgres.run("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", on: url)) ?? "" }

        try first.beginBatch()
        try first.commit(event: textEvent(1), records: [], auction: nil, bid: nil)
        // The second asks for the lock, then the third: the second is first in line.
        let secondMayCommit = DispatchSemaphore(value: 0)
        let secondDone = DispatchSemaphore(value: 0)
        Thread {
            _ = try? second.beginBatch()
            _ = try? second.commit(event: textEvent(2), records: [], auction: nil, bid: nil)
            secondMayCommit.wait()
            _ = try? second.commitBatch()
            secondDone.signal()
        }.start()
        #expect(eventually(timeout: 30) { waiting() == "1" })
        let thirdStart = Lock<BatchStart?>(nil)
        let thirdDone = DispatchSemaphore(value: 0)
        Thread {
            let start = try? third.beginBatch(news: news)
            began.store(true, ordering: .relaxed)
            thirdStart.withLock { $0 = start }
            _ = try? third.commit(event: textEvent(3), records: [], auction: nil, bid: nil)
            _ = try? third.commitBatch()
            thirdDone.signal()
        }.start()
        #expect(eventually(timeout: 30) { waiting() == "2" })

        try first.commitBatch()
        #expect(eventually(timeout: 30) { taken.withLock { $0.count } == 1 }, "the first's news, while the third still waits")
        #expect(taken.withLock { $0.first?.ids } == [1])
        #expect(taken.withLock { $0.first?.waiting } == true)
        secondMayCommit.signal()
        #expect(secondDone.wait(timeout: .now() + 30) == .success)
        #expect(thirdDone.wait(timeout: .now() + 30) == .success)
        #expect(taken.withLock { $0.map(\.ids) } == [[1], [2]], "then the second's, before the third's batch began")
        #expect(taken.withLock { $0.allSatisfy(\.waiting) })
        #expect(thirdStart.withLock { $0?.behind } == false, "it began caught up")
        #expect(thirdStart.withLock { $0?.committed } == 2)
        #expect(third.revisionsTakenFromNews == 2)
        #expect(third.prefetchedBatches == 0, "it read nothing with its lock")
        #expect(try TestPostgres.run("SELECT string_agg(id::text, ',' ORDER BY id) FROM herald_events", on: url) == "1,2,3")
    }

    /// News missed while no listener listened: a listener that (re)connects reads the revision
    /// committed then, and the next batch reads up to it with its lock instead of waiting for news
    /// that will not come; what is committed after it comes as news again.
    @Test func newsMissedWhileNotListeningIsReadBack() throws {
        let url = try TestPostgres.database()
        let (writer, reader) = (try PostgresStore(url: url), try PostgresStore(url: url))
        _ = try reader.load(eventLimit: 0)
        let news: NewsTaker = { _, _ in .taken }
        try writer.beginBatch()
        try writer.commit(event: textEvent(1), records: [], auction: nil, bid: nil)
        try writer.commitBatch()
        // Committed before the reader listens: it hears nothing of it.
        let (listener, heard) = listening(reader)
        defer { listener.stop() }
        #expect(try reader.beginBatch(news: news)?.behind == true)
        // Read in the lock's round trip: a batch that reads this way never waits for news.
        #expect(reader.prefetchedBatches == 1, "it read what it missed with its lock, without waiting for news")
        #expect(try reader.events(after: 0) == [textEvent(1)])
        try reader.commitBatch()
        #expect(reader.revisionsTakenFromNews == 0)

        try writer.beginBatch()
        try writer.commit(event: textEvent(2), records: [], auction: nil, bid: nil)
        try writer.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } >= 2 })
        #expect(try reader.beginBatch(news: news)?.behind == false, "what followed came as news")
        #expect(reader.revisionsTakenFromNews == 1)
        #expect(reader.prefetchedBatches == 1)
        try reader.commitBatch()
    }

    /// PostgreSQL's notification queue empties only as fast as its slowest listener: while it is
    /// fuller than the store's limit, commits notify their revision alone (the others read them).
    @Test func aFullNotificationQueueStopsTheNews() throws {
        let url = try TestPostgres.database()
        // Any use of the queue is above the writer's limit.
        let (writer, reader) = (try PostgresStore(url: url, newsQueueLimit: -1), try PostgresStore(url: url))
        _ = try reader.load(eventLimit: 0)
        let news: NewsTaker = { _, _ in .taken }
        let (listener, heard) = listening(reader)
        defer { listener.stop() }
        #expect(writer.carriesNews)
        try writer.beginBatch()
        #expect(!writer.carriesNews, "the batch read the queue's use, above the limit")
        try writer.commit(event: textEvent(1), records: [], auction: nil, bid: nil)
        try writer.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } >= 2 })
        #expect(try reader.beginBatch(news: news)?.behind == true, "no news came: the revision alone")
        #expect(try reader.events(after: 0) == [textEvent(1)], "read back")
        try reader.commitBatch()
        #expect(reader.revisionsTakenFromNews == 0)
    }

    @Test func theListenerHearsEveryCommitOfAnotherStore() throws {
        let url = try TestPostgres.database()
        let (watcher, writer) = (try PostgresStore(url: url), try PostgresStore(url: url))
        let (listener, heard) = listening(watcher)
        defer { listener.stop() }
        #expect(heard.withLock { $0 } == 1, "once when it connects")
        try writer.commit(event: event(1), records: [], auction: nil, bid: nil)
        #expect(eventually(timeout: 30) { heard.withLock { $0 } == 2 }, "then once per commit")
        try writer.beginBatch()
        try writer.commit(event: event(2), records: [], auction: nil, bid: nil)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(heard.withLock { $0 } == 2, "nothing before the commit")
        try writer.commitBatch()
        #expect(eventually(timeout: 30) { heard.withLock { $0 } == 3 })
        #expect(watcher.unwritableReason() == nil)
        let name = try #require(URL(string: url)?.lastPathComponent)
        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
        try TestPostgres.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND application_name = '\(PostgresListener.applicationName)'")
        #expect(eventually(timeout: 30) { watcher.unwritableReason() != nil }, "a lost listener makes the store not ready")
        try TestPostgres.run("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        #expect(eventually(timeout: 30) { watcher.unwritableReason() == nil && heard.withLock { $0 } == 4 },
                "it connects again, and says so (commits may have been missed)")
    }

    @Test func migrationsGoByNameAndADatabaseFromANewerHeraldIsRefused() throws {
        let url = try TestPostgres.database()
        _ = try PostgresStore(url: url)
        #expect(try TestPostgres.run("SELECT string_agg(name, ',') FROM herald_migrations", on: url)
                == PostgresMigrations.all.map(\.name).joined(separator: ","))
        _ = try PostgresStore(url: url)  // nothing to run the second time
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_migrations", on: url) == String(PostgresMigrations.all.count))
        try TestPostgres.run("INSERT INTO herald_migrations (name) VALUES ('9999-from-the-future')", on: url)
        let refusal = #expect(throws: StoreError.self) { try PostgresStore(url: url) }
        #expect(refusal?.description.contains("newer Herald (9999-from-the-future)") == true, "\(String(describing: refusal))")
    }

    @Test func aDatabaseThatCannotBeReachedSaysSo() throws {
        let port = try #require(TestPostgres.adminURL.flatMap { URLComponents(string: $0)?.port })
        // The server's port plus one thousand, mod the range: nothing listens there (checked below).
        let closed = (port + 1000) % 60_000 + 1024
        let refusal = #expect(throws: StoreError.self) { try PostgresStore(url: "postgres://postgres@127.0.0.1:\(closed)/postgres") }
        #expect(refusal?.kind == .unreachable)
        #expect(refusal?.description.contains("cannot connect to PostgreSQL") == true, "\(String(describing: refusal))")
    }

    /// The connection breaks (the server ends the session): the change in flight fails as
    /// unreachable, and the next one connects again, takes the lock again and is stored.
    @Test func aBrokenConnectionIsReplacedAtTheNextChange() throws {
        let url = try TestPostgres.database()
        let store = try PostgresStore(url: url)
        try store.commit(event: event(1), records: [], auction: nil, bid: nil)
        let name = try #require(URL(string: url)?.lastPathComponent)
        try TestPostgres.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND application_name = 'herald'")
        let failure = #expect(throws: StoreError.self) { try store.commit(event: event(2), records: [], auction: nil, bid: nil) }
        #expect(failure?.kind == .unreachable, "\(String(describing: failure))")
        #expect(store.unwritableReason() != nil, "readiness hears of it")
        try store.commit(event: event(2), records: [], auction: nil, bid: nil)
        #expect(store.unwritableReason() == nil)
        #expect(try store.load(eventLimit: 10).events.map(\.id) == [1, 2])
    }

    /// A change made outside a batch, after another store committed, does not count that commit as
    /// read: the next batch still finds itself behind, and reads the other's change.
    @Test func aChangeOutsideABatchDoesNotSkipWhatAnotherCommittedBeforeIt() throws {
        let url = try TestPostgres.database()
        let (first, second) = (try PostgresStore(url: url), try PostgresStore(url: url))
        _ = try first.load(eventLimit: 0)
        try second.commit(event: event(1), records: [RecordChange(kind: "unit", id: "b", document: [2])], auction: nil, bid: nil)
        try first.commit(event: event(2), records: [], auction: nil, bid: nil)
        #expect(try first.beginBatch()?.behind == true, "the second's change is still to be read")
        #expect(try first.missedChanges()?.changed.records["unit"]?.map(\.id) == ["b"])
        first.rollbackBatch()
    }

    /// Nothing waits for ever on another session: a batch that waits `lockWait` for the write lock is
    /// refused as busy (503 to its clients), and a session that sits that long in its transaction
    /// without a word is ended by PostgreSQL, which lets the lock go to the next batch.
    @Test func neitherTheLockNorAnIdleTransactionIsWaitedForForEver() throws {
        let url = try TestPostgres.database()
        let held = try TestPostgres.HeldLock(PostgresStore.lockKey, on: url)
        let waiting = try PostgresStore(url: url, lockWait: .milliseconds(500))
        let refused = Self.within(60) { Result { () throws(StoreError) in try waiting.beginBatch() } }
        held.release()
        #expect(refused != nil, "the wait for the lock ended")
        guard case .failure(let refusal)? = refused else { Issue.record("the batch began under a held lock"); return }
        #expect(refusal.kind == .busy, "\(refusal)")
        try waiting.commit(event: event(1), records: [], auction: nil, bid: nil)

        // A replica that began a batch and went quiet: it holds the lock until PostgreSQL ends its session.
        let quiet = try PostgresStore(url: url, lockWait: .milliseconds(500))
        #expect(try quiet.beginBatch()?.committed == 1)
        let next = try PostgresStore(url: url, lockWait: .seconds(60))
        let began = Self.within(60) { Result { () throws(StoreError) in try next.beginBatch() } }
        #expect(began != nil, "the quiet session was ended, and the lock with it")
        #expect(try began?.get()?.committed == 1)
        try next.commit(event: event(2), records: [], auction: nil, bid: nil)
        try next.commitBatch()
        #expect(throws: StoreError.self, "the quiet batch's session is gone") { try quiet.commitBatch() }
        try quiet.commit(event: event(3), records: [], auction: nil, bid: nil)
        #expect(try quiet.load(eventLimit: 10).events.map(\.id) == [1, 2, 3], "it connects again and goes on")
    }

    /// Runs `body` on a thread of its own and returns what it returned, or nil when it did not return
    /// within `seconds` (it is left running): a test of a wait that must end fails instead of hanging.
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let outcome = Lock<T?>(nil)
        Thread {
            let value = body()
            outcome.withLock { $0 = value }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    @Test func pruningByCountAndAgeKeepsTheSequence() throws {
        let store = try PostgresStore(url: try TestPostgres.database())
        for id in 1...5 {
            try store.commit(event: event(UInt64(id), at: Date(timeIntervalSince1970: Double(id) * 100)), records: [], auction: nil, bid: nil)
        }
        #expect(try store.prune(keep: 3, before: nil) == 3)
        #expect(try store.prune(keep: 10, before: Date(timeIntervalSince1970: 450)) == 5)
        #expect(try store.eventCount() == 1)
        #expect(try store.prune(keep: 0, before: nil) == 6, "none left: one past the newest deleted")
        #expect(try store.load(eventLimit: 10).lastSequence == 5)
    }

    @Test func sqlStatesMapToWhatACallerCanDo() {
        #expect(PostgresConnection.kind(sqlState: "40001") == .busy)
        #expect(PostgresConnection.kind(sqlState: "40P01") == .busy)
        #expect(PostgresConnection.kind(sqlState: "53100") == .full)
        #expect(PostgresConnection.kind(sqlState: "25006") == .readOnly)
        #expect(PostgresConnection.kind(sqlState: "08006") == .unreachable)
        #expect(PostgresConnection.kind(sqlState: "57P01") == .unreachable)
        #expect(PostgresConnection.kind(sqlState: "XX001") == .corrupt)
        #expect(PostgresConnection.kind(sqlState: "23505") == .other)
        #expect(PostgresConnection.kind(sqlState: nil) == .other)
    }

    @Test func byteaTextDecodesToTheBytesWritten() {
        #expect(PostgresConnection.bytes("\\x00ff7b41") == [0, 0xFF, 0x7B, 0x41])
        #expect(PostgresConnection.bytes("\\x") == [])
        #expect(PostgresConnection.bytes(nil) == [])
    }
}
