import CSQLite
import Dispatch
import Foundation
import HeraldDomain
import HeraldStore
import HeraldTestSupport
import HeraldThreads
import Synchronization
import Testing

@testable import HeraldServer

/// Changes run on one writer thread, in batches that share one sync of the store's log.
@Suite struct WriterTests {
    /// Before the writer runs, a thread that makes a change stands in for it, one at a time: the thread
    /// setting Herald up, or a restored countdown's timer that fires first. Once it runs, changes go
    /// through its queue.
    @Test func beforeItRunsOneThreadAtATimeStandsInForTheWriter() throws {
        let writer = Writer()
        let batches = Lock(0)
        let steps = Writer.Steps(prepare: { _ in nil }, finish: { _ in batches.withLock { $0 += 1 }; return nil }, tidy: {})
        let inside = Lock((now: 0, most: 0, done: 0))
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            try? writer.perform(batches: steps) { _ throws(DomainError) in
                inside.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                usleep(2_000)
                inside.withLock { $0.now -= 1; $0.done += 1 }
            }
        }
        #expect(inside.withLock { $0.most } == 1, "two threads stood in for the writer at once")
        #expect(inside.withLock { $0.done } == 8 && batches.withLock { $0 } == 8, "each change its own batch")
        writer.start(batches: steps)
        defer { writer.stop() }
        #expect(try writer.perform(batches: steps) { _ throws(DomainError) in writer.isCurrentThread } == true, "once it runs, on its thread")
    }

    @Test func aHundredConcurrentBidsAreAnsweredInPriceOrderAndStoredAsPublished() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(dataDirectory: directory, synchronous: .full)
        defer { server.stop() }
        let id = try server.auction(countdown: 3600)
        let stream = try server.stream("/auctions/\(id)/events?snapshot=false")
        let before = server.herald.journal.writer.statistics
        let answers = Lock<[(amount: Int, status: Int, bidId: String?)]>([])
        let port = server.port
        // A hundred threads, each with its bid ready, let go at once.
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for index in 0..<100 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let amount = index + 1
                let client = HTTPClient(port: port)
                go.wait()
                let response = try? client.post("/auctions/\(id)/bids", #"{"bidder":"b\#(amount)","amount":\#(amount)}"#)
                let bidId = (response?.json["bid"] as? [String: Any])?["id"] as? String
                answers.withLock { $0.append((amount, response?.status ?? 0, bidId)) }
            }
        }
        for _ in 0..<100 { go.signal() }
        done.wait()
        let all = answers.withLock { $0 }
        #expect(all.count == 100)
        #expect(all.allSatisfy { $0.status == 201 || $0.status == 409 }, "\(all.map(\.status).filter { $0 != 201 && $0 != 409 })")
        let accepted = all.filter { $0.status == 201 }.sorted { Int($0.bidId ?? "") ?? 0 < Int($1.bidId ?? "") ?? 0 }
        #expect(!accepted.isEmpty)
        #expect(accepted.map(\.amount) == accepted.map(\.amount).sorted() && Set(accepted.map(\.amount)).count == accepted.count,
                "in the order the bids were taken, each is higher than the one before")
        #expect(accepted.last?.amount == 100 || all.contains { $0.amount == 100 && $0.status == 201 }, "the highest bid can never be refused")

        let published = try stream.next(accepted.count)
        let publishedAmounts = published.compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int }
        #expect(publishedAmounts == accepted.map(\.amount), "every acknowledged bid is published, in the order taken")
        let ids = published.compactMap { $0.id.flatMap(UInt64.init) }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        let stored = try server.client().all("/auctions/\(id)/bids", "bids")
        #expect(stored.compactMap { $0["amount"] as? Int } == publishedAmounts, "the stored order is the published order")

        let after = server.herald.journal.writer.statistics
        #expect(after.changes - before.changes == 100)
        #expect(after.batches - before.batches < 100, "bids that arrive while the log syncs share the next batch's sync")
    }

    @Test func aWriterWaitingOnTheStoreDelaysWritesNotReads() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        let stream = try server.stream("/units/events?snapshot=false")
        // Another process holds the store's write lock: each change waits for it (200 ms) and is refused.
        var other: OpaquePointer?
        #expect(sqlite3_open(directory + "/herald.sqlite3", &other) == SQLITE_OK)
        defer { sqlite3_close(other) }
        #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
        let port = server.port
        let writes = DispatchGroup()
        let statuses = Lock<[Int]>([])
        for index in 0..<5 {
            writes.enter()
            Thread.detachNewThread {
                defer { writes.leave() }
                let status = (try? HTTPClient(port: port).put("/units/u\(index)", #"{"name":"U","status":"healthy"}"#).status) ?? 0
                statuses.withLock { $0.append(status) }
            }
        }
        writes.wait()
        #expect(statuses.withLock { $0 }.sorted() == [503, 503, 503, 503, 503], "refused while the lock is held")
        _ = sqlite3_exec(other, "ROLLBACK", nil, nil, nil)
        // Then the writer is held in a change of the test's own until the reads are done: a read that
        // waited for the writer would never be answered (the client gives up, and the test fails).
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        server.herald.journal.writer.submit({ _ in held.signal(); release.wait() }, done: { _ in })
        #expect(held.wait(timeout: .now() + 60) == .success, "the writer took the test's change")
        let client = server.client()
        var reads: [Int] = []
        for _ in 0..<10 {
            reads.append((try? client.get("/health").status) ?? 0)
            reads.append((try? client.get("/units").status) ?? 0)
        }
        release.signal()
        #expect(reads == Array(repeating: 200, count: 20), "reads are answered while the writer waits")
        #expect(try client.put("/units/late", #"{"name":"L","status":"healthy"}"#).status == 201)
        #expect(try stream.next().event == "unit", "the refused changes published nothing; the next one is seen")
    }
}
