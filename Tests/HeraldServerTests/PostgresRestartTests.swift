import Foundation
import HeraldTestSupport
import HeraldThreads
import Synchronization
import Testing

/// A replica restarted while another takes bids (a rolling deploy under write traffic): it starts every
/// time, its first changes are taken, and nothing is stored twice or seen out of order.
@Suite(.enabled(if: TestPostgres.adminURL != nil, "scripts/test installs PostgreSQL and says so with HERALD_TEST_POSTGRES"))
struct PostgresRestartTests {
    /// Replica A takes bids from two clients without a pause; replica B is started, bid on and watched,
    /// then killed (`kill -9` ten times, SIGTERM ten times), again and again. Every start of B must come
    /// up, no answer anywhere is a 5xx other than 503, every acknowledged bid is stored exactly once, and
    /// every stream, on A and on each B, sees ids that only go up.
    @Test func aReplicaRestartedWhileAnotherCommitsStartsEveryTime() throws {
        let url = try TestPostgres.database()
        // A short history: each start reads it, and under AddressSanitizer 10,000 events took longer to
        // restore than a start may take here.
        let arguments = ["--store", url, "--no-examples", "--history-events", "1000"] + HeraldProcess.unlimited
        let first = try HeraldProcess(arguments: arguments)
        let auction = try #require(try HTTPClient(port: first.port)
            .post("/auctions", #"{"item":"rolling","countdownSeconds":3600,"startingPrice":1}"#).json["id"] as? String)
        // A's observer, open throughout, read as the bids come (a stream left unread is cut as slow).
        let seenOnA = Lock([(id: UInt64, amount: Int)]())
        let readingA = DispatchGroup()
        let watching = DispatchSemaphore(value: 0)
        let readAll = Atomic<Bool>(false)
        readingA.enter()
        Thread.detachNewThread { [port = first.port] in
            defer { readingA.leave() }
            let watchingA = try? SSEClient(port: port, path: "/auctions/\(auction)/events?snapshot=false")
            _ = try? watchingA?.awaitHead()
            watching.signal()
            while !readAll.load(ordering: .relaxed), let watchingA {
                guard let event = try? watchingA.next(timeout: 1), event.event == "bid" else { continue }
                let amount = (event.json["bid"] as? [String: Any])?["amount"] as? Int ?? -1
                seenOnA.withLock { $0.append((event.id.flatMap(UInt64.init) ?? 0, amount)) }
            }
        }
        watching.wait()
        let amount = Atomic<Int>(1)
        let stop = Atomic<Bool>(false)
        let acknowledged = Lock([Int]())
        let failures = Lock([String]())
        let bidders = DispatchGroup()
        let port = first.port
        for bidder in 0..<2 {
            bidders.enter()
            Thread.detachNewThread {
                defer { bidders.leave() }
                let client = HTTPClient(port: port)
                while !stop.load(ordering: .relaxed) {
                    let bid = amount.add(1, ordering: .relaxed).newValue
                    guard let response = try? client.post("/auctions/\(auction)/bids", #"{"bidder":"a\#(bidder)","amount":\#(bid)}"#) else {
                        failures.withLock { $0.append("replica A stopped answering") }
                        return
                    }
                    if response.status == 201 { acknowledged.withLock { $0.append(bid) } }
                    if response.status >= 500, response.status != 503 { failures.withLock { $0.append("A: \(response.status) \(response.text)") } }
                    // Steady, not flat out: a few hundred bids a second between the two.
                    Thread.sleep(forTimeInterval: 0.005)
                }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            _ = bidders.wait(timeout: .now() + 30)
        }
        var startsSeen = 0
        for restart in 0..<20 {
            // Some of A's bids land between one B and the next.
            let before = acknowledged.withLock { $0.count }
            #expect(eventually(timeout: 30) { acknowledged.withLock { $0.count } >= before + 20 }, "A goes on taking bids")
            let second: HeraldProcess
            do {
                second = try HeraldProcess(arguments: arguments)
            } catch {
                Issue.record("start \(restart) of replica B failed: \(error)")
                continue
            }
            startsSeen += 1
            let watchingB = try SSEClient(port: second.port, path: "/auctions/\(auction)/events?snapshot=false")
            let client = HTTPClient(port: second.port)
            var idsOnB: [UInt64] = []
            for _ in 0..<5 {
                let bid = amount.add(1, ordering: .relaxed).newValue
                let response = try client.post("/auctions/\(auction)/bids", #"{"bidder":"b","amount":\#(bid)}"#)
                if response.status == 201 { acknowledged.withLock { $0.append(bid) } }
                #expect(response.status == 201 || response.status == 409 || response.status == 503,
                         "start \(restart): B answered \(response.status) \(response.text)")
            }
            // What B's observer sees for a moment (A goes on bidding): ids that only go up.
            let reading = Date().addingTimeInterval(1)
            while Date() < reading, let event = try? watchingB.next(timeout: 0.5) {
                if event.event == "bid", let id = event.id.flatMap(UInt64.init) { idsOnB.append(id) }
            }
            #expect(!idsOnB.isEmpty, "start \(restart): B's observer saw bids")
            #expect(zip(idsOnB, idsOnB.dropFirst()).allSatisfy { $0 < $1 }, "start \(restart): B's ids \(idsOnB)")
            #expect(second.process.isRunning, "start \(restart): B is still running: \(second.log.text.suffix(2000))")
            kill(second.process.processIdentifier, restart < 10 ? SIGKILL : SIGTERM)
            second.process.waitUntilExit()
            // Killed, or (SIGTERM) stopped cleanly: exit 0, with nothing leaked under the test command's
            // LeakSanitizer (the replicas' listener once kept the presence exchange, and so all of
            // Herald, alive through its message handler).
            let killed = second.process.terminationReason == .uncaughtSignal && second.process.terminationStatus == SIGKILL
            let stopped = second.process.terminationReason == .exit && second.process.terminationStatus == 0
            #expect(restart < 10 ? killed : stopped, "start \(restart): B ended as it was told: \(second.log.text.suffix(3000))")
        }
        #expect(startsSeen == 20)
        stop.store(true, ordering: .relaxed)
        #expect(bidders.wait(timeout: .now() + 30) == .success)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(5))")
        let bids = acknowledged.withLock { $0 }
        #expect(bids.count > 200, "bids were taken: \(bids.count)")
        let stored = try #require(try TestPostgres.run("SELECT string_agg(amount::text, ',' ORDER BY number) FROM herald_bids", on: url))
        let amounts = stored.split(separator: ",").compactMap { Int($0) }
        #expect(Set(amounts).count == amounts.count, "no bid stored twice")
        #expect(Set(bids).isSubset(of: Set(amounts)), "every acknowledged bid is stored: \(Set(bids).subtracting(amounts).sorted().prefix(10))")
        // A's observer saw every stored bid once, in order.
        #expect(eventually(timeout: 30) { seenOnA.withLock { $0.count } >= amounts.count })
        readAll.store(true, ordering: .relaxed)
        #expect(readingA.wait(timeout: .now() + 10) == .success)
        let seen = seenOnA.withLock { $0 }
        let mismatch = zip(seen.map(\.amount), amounts).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(seen.count == amounts.count && mismatch == nil,
                "A's observer saw \(seen.count) of \(amounts.count) stored bids; first difference: \(String(describing: mismatch))")
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.id < $1.id }, "A's ids only go up")
    }
}
