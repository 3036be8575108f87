import Foundation
import HeraldClient
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Synchronization
import Testing

/// `HeraldClient` against a live Herald: typed states across a restart, resync, cancellation,
/// problems, token renewal and a thousand sequences at once.
///
/// Waits here are async polls (`until`), never a blocking wait: a blocked thread of Swift's
/// cooperative pool (two threads on this machine) would starve the client's own tasks. For the same
/// reason the test command runs these suites apart from the others (scripts/test, `client_suites`).
@Suite struct HeraldClientTests {
    /// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
    func until(_ timeout: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    func client(_ port: Int, token: HeraldClient.TokenProvider? = nil) throws -> HeraldClient {
        HeraldClient(url: try #require(URL(string: "http://127.0.0.1:\(port)")), token: token)
    }

    /// Collects what a sequence gives, on a task of its own, until cancelled.
    final class Collected<Element: Sendable>: Sendable {
        private let values = Mutex<[Element]>([])
        private let failure = Mutex<(any Error)?>(nil)
        var all: [Element] { values.withLock { $0 } }
        var error: (any Error)? { failure.withLock { $0 } }

        func run(_ sequence: AsyncThrowingStream<Element, any Error>) -> Task<Void, Never> {
            Task {
                do {
                    for try await value in sequence { values.withLock { $0.append(value) } }
                } catch {
                    failure.withLock { $0 = error }
                }
            }
        }
    }

    /// Lets the client's next connection through only when opened: it stands in the token provider,
    /// which the client calls before every connection.
    final class Gate: Sendable {
        private let open = Mutex(true)
        func close() { open.withLock { $0 = false } }
        func pass() async {
            while !open.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
        }
        func openUp() { open.withLock { $0 = true } }
    }

    func bid(_ port: Int, _ auction: String, _ amount: Int) throws {
        let response = try HTTPClient(port: port).post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":\#(amount)}"#)
        #expect(response.status == 201, "\(response.text)")
    }

    /// Stops Herald with SIGTERM, starts it again on the same data directory and port, and makes
    /// `bids` while the client is held at its gate, so that it resumes after them.
    func restart(_ herald: inout HeraldProcess, directory: String, arguments: [String], gate: Gate,
                 bids: ClosedRange<Int>, auction: String) throws {
        let port = herald.port
        gate.close()
        herald.process.terminate()
        herald.process.waitUntilExit()
        herald = try HeraldProcess(arguments: arguments + ["--port", String(port)], dataDirectory: directory)
        #expect(herald.port == port)
        for amount in bids { try bid(port, auction, amount * 10) }
        gate.openUp()
    }

    /// A Herald on `directory` that `restart` can stop and start again, a client held at the gate
    /// while it is away, and an auction that counts down an hour.
    func restartable(_ directory: String, arguments: [String]) throws -> (HeraldProcess, Gate, HeraldClient, String) {
        let herald = try HeraldProcess(arguments: arguments, dataDirectory: directory)
        let gate = Gate()
        let client = try client(herald.port) { await gate.pass(); return nil }
        let created = try HTTPClient(port: herald.port).post("/auctions", #"{"item":"lamp","countdownSeconds":3600}"#)
        let auction = try #require(created.json["id"] as? String)
        return (herald, gate, client, auction)
    }

    /// An auction's states across a restart (SIGTERM, then a new Herald on the same data directory):
    /// the bids made while the client was away arrive once each, and the prices have no gap and no
    /// repeat.
    @Test func statesAcrossARestartHaveNoGapAndNoRepeat() async throws {
        let directory = temporaryDirectory("herald-client")
        defer { removeTemporaryDirectory(directory) }
        var (herald, gate, herald1, auction) = try restartable(directory, arguments: [])
        let port = herald.port
        let prices = Collected<Int>()
        let reader = prices.run(mapped(herald1.auction(auction).states) { $0.price })
        defer { reader.cancel() }
        #expect(await until { prices.all == [0] })
        for amount in 1...10 { try bid(port, auction, amount * 10) }
        #expect(await until { prices.all.count == 11 })
        try restart(&herald, directory: directory, arguments: [], gate: gate, bids: 11...20, auction: auction)
        for amount in 21...30 { try bid(port, auction, amount * 10) }
        #expect(await until { prices.all.count >= 31 }, "\(prices.all)")
        try? await Task.sleep(for: .milliseconds(200))
        #expect(prices.all == [0] + (1...30).map { $0 * 10 }, "every price once, in order")
        #expect(prices.error == nil)
    }

    /// A client away for longer than the history kept gets `resync`, and `states` gives the current
    /// state, not the gap: the prices it shows jump from before the restart to the last bid.
    @Test func aResyncGivesTheCurrentState() async throws {
        let directory = temporaryDirectory("herald-client")
        defer { removeTemporaryDirectory(directory) }
        let arguments = ["--history", "5"]
        var (herald, gate, herald1, auction) = try restartable(directory, arguments: arguments)
        let port = herald.port
        let prices = Collected<Int>()
        let reader = prices.run(mapped(herald1.auction(auction).states) { $0.price })
        defer { reader.cancel() }
        try bid(port, auction, 10)
        #expect(await until { prices.all.last == 10 })
        try restart(&herald, directory: directory, arguments: arguments, gate: gate, bids: 2...20, auction: auction)
        #expect(await until { prices.all.last == 200 }, "\(prices.all)")
        let seen = prices.all
        #expect(Array(seen.suffix(2)) == [10, 200], "the fresh state right after the last one before: \(seen)")
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)

        // The same through `events`: resync, then the snapshot.
        let events = Collected<HeraldEvent>()
        let eventReader = events.run(herald1.events(topics: ["auctions/\(auction)"], after: "1"))
        defer { eventReader.cancel() }
        #expect(await until { events.all.count >= 2 })
        guard events.all.count >= 2 else { return }
        #expect(events.all[0].kind == .resync(lastEventID: try #require(events.all[0].id)))
        guard case .snapshot(.auction(let current)) = events.all[1].kind else {
            Issue.record("no snapshot after the resync: \(events.all)")
            return
        }
        #expect(current.price == 200)
    }

    /// Cancelling the task that iterates closes the connection: the server's observer count drops.
    @Test func cancellationDropsTheObserver() async throws {
        let server = try TestHerald()
        defer { server.stop() }
        let herald = try client(server.port)
        let auction = try server.auction()
        let topic = "auctions/\(auction)"
        let states = Collected<Auction>()
        let reader = states.run(herald.auction(auction).states)
        #expect(await until { states.all.count == 1 })
        #expect(try server.observers(of: topic) == 1)
        let cancelled = Date()
        reader.cancel()
        // The issue asks for 2 s; the time is measured in `git show dad6eb7:BENCHMARKS.md`, not asserted here.
        #expect(await until { (try? server.observers(of: topic)) == 0 })
        print("HeraldClientTests: the observer was gone \(Int(Date().timeIntervalSince(cancelled) * 1000)) ms after the cancel")
    }

    /// A refusal is a `HeraldProblem` with the server's status and detail, from a command and from a
    /// stream alike.
    @Test func refusalsAreTypedProblems() async throws {
        let server = try TestHerald()
        defer { server.stop() }
        let herald = try client(server.port)
        let auction = try server.auction(countdown: 3600, startingPrice: 100)
        try await herald.bid(on: auction, amount: 150, bidder: "ann")
        do {
            try await herald.bid(on: auction, amount: 120, bidder: "bob")
            Issue.record("a lower bid was taken")
        } catch let problem as HeraldProblem {
            #expect(problem.status == 409)
            #expect(problem.detail.contains("150"), "\(problem.detail)")
            #expect(problem.requestId != nil)
        }
        do {
            try await herald.bid(on: "nope", amount: 1, bidder: "ann")
            Issue.record("a bid on no auction was taken")
        } catch let problem as HeraldProblem {
            #expect(problem.status == 404)
            #expect(problem.detail.contains("nope"))
        }
        // An id is one path segment, escaped once: the server reads back the id that was given.
        do {
            _ = try await herald.unit("no/such").current()
            Issue.record("a unit that does not exist was read")
        } catch let problem as HeraldProblem {
            #expect(problem.status == 404)
            #expect(problem.detail.contains("'no/such'"), "\(problem.detail)")
        }
        do {
            try await herald.putUnit("u1", name: String(repeating: "n", count: 101), status: .healthy)
            Issue.record("a 101-character name was taken")
        } catch let problem as HeraldProblem {
            #expect(problem.status == 422)
            #expect(problem.errors?.first?.field == "name")
        }
        // A unit not made yet: nil, then the unit once it is made.
        let stream = Collected<HeraldUnit?>()
        let reader = stream.run(herald.unit("nobody").states)
        defer { reader.cancel() }
        #expect(await until { stream.all.count == 1 })
        #expect(stream.all.first == .some(nil) && stream.error == nil, "\(stream.all)")
        _ = try await herald.putUnit("nobody", name: "Nobody", status: .healthy)
        #expect(await until { stream.all.last??.name == "Nobody" }, "\(stream.all)")
        #expect(try await herald.auction(auction).current().price == 150)
    }

    /// Commands answer typed values, and every kind of subject's `states` follows its changes.
    @Test func commandsAndEveryKindOfSubject() async throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let herald = try client(server.port)
        let currencies = Collected<CurrencySetting>()
        let units = Collected<HeraldUnit?>()
        let trips = Collected<Trip>()
        let all = Collected<HeraldEvent>()
        try await herald.putUnit("u1", name: "Scout", status: .healthy)
        let readers = [currencies.run(herald.currency.states), units.run(herald.unit("u1").states), trips.run(herald.trip("1").states),
                       all.run(herald.events(topics: ["notifications/n", "units", "auctions;status=open"]))]
        defer { readers.forEach { $0.cancel() } }
        #expect(await until { currencies.all.count == 1 && units.all.count == 1 && trips.all.count == 1 && all.all.count == 2 })
        #expect(try await herald.setCurrency(.euro).default == .euro)
        #expect(try await herald.putUnit("u1", name: "Scout", status: .wounded).face == "🤕")
        try await herald.removeUnit("u1")
        let moved = try await herald.moveDeparture(of: "1", to: "2015-10-09T13:24:53Z")
        #expect(moved.delaySeconds == 900)
        let created = try await herald.createAuction(item: "lamp", countdownSeconds: 60)
        let id = try await herald.post(notification: "n", object: "o", userInfo: ["k": .number(1)])
        #expect(await until { currencies.all.count == 2 && units.all.count == 3 && trips.all.count == 2 && all.all.count >= 6 },
                "\(currencies.all.count) \(units.all.count) \(trips.all.count) \(all.all.map(\.kind))")
        #expect(currencies.all.map(\.default).last == .euro)
        #expect(currencies.all.last?.available == Currency.allCases)
        #expect(units.all.map { $0?.status } == [.healthy, .wounded, nil])
        #expect(trips.all.last == moved)
        let kinds = all.all.map(\.kind)
        #expect(kinds.contains(.auction(created)))
        #expect(kinds.contains(.unit(HeraldUnit(id: "u1", name: "Scout", status: .wounded, face: "🤕"), created: false)))
        #expect(kinds.contains(.left(id: "u1")))
        let posted = all.all.first { if case .notification = $0.kind { true } else { false } }
        #expect(posted?.id == id)
        if case .notification(let notification)? = posted?.kind {
            #expect(notification.object == "o")
            #expect(notification.userInfo["k"] == .number(1))
        }
    }

    /// A stream whose token nears its end is renewed in place, at every end: no `expired`, no second
    /// connection, and a bid after the second token's `exp` still arrives. Real time: the first token
    /// lasts 20 s, the second (the first renewal's) 40 s from the start, and the warning comes 15 s
    /// before each end, so a renewal has 15 s to land even on a busy machine. (Without the renewal
    /// this fails: the stream ends with `expired` and a second connection opens.)
    @Test func aStreamIsRenewedBeforeEachOfItsTokensEnds() async throws {
        let server = try await TestHerald.secured { $0.http.expiryWarning = .seconds(15) }
        defer { server.stop() }
        let made = Date()
        let calls = Mutex(0)
        let herald = try client(server.port) {
            let call = calls.withLock { $0 += 1; return $0 }
            let ends = [1: made.addingTimeInterval(20), 2: made.addingTimeInterval(40)]
            return try await Tokens.make(expires: ends[call] ?? Date().addingTimeInterval(3600))
        }
        let writer = try await Tokens.make()
        let created = try server.client().request("POST", "/auctions", json: #"{"item":"lamp","countdownSeconds":3600}"#, headers: Tokens.bearer(writer))
        let auction = try #require(created.json["id"] as? String)
        let events = Collected<HeraldEvent>()
        let reader = events.run(herald.events(topics: ["auctions/\(auction)"]))
        defer { reader.cancel() }
        // Past the second token's end and the engine's next tick after it, with seconds to spare.
        let past = made.addingTimeInterval(45).timeIntervalSinceNow
        if past > 0 { try await Task.sleep(for: .seconds(past)) }
        try await herald.bid(on: auction, amount: 10)
        #expect(await until { events.all.contains { if case .bid = $0.kind { true } else { false } } })
        let kinds = events.all.map(\.kind)
        #expect(kinds.filter { if case .tokenExpiring = $0 { true } else { false } }.count == 2, "warned at each end: \(kinds)")
        #expect(kinds.filter { if case .stream = $0 { true } else { false } }.count == 1, "one connection: \(kinds)")
        #expect(!kinds.contains { if case .expired = $0 { true } else { false } }, "\(kinds)")
        #expect(kinds.filter { if case .snapshot = $0 { true } else { false } }.count == 1)
    }

    /// A stream an administrator ends delivers `ended`, and its sequence ends with a 410 problem: the
    /// client does not reconnect, though its token would open another stream.
    @Test func aStreamAnAdministratorEndsEndsTheSequence() async throws {
        let server = try await TestHerald.secured()
        defer { server.stop() }
        let herald = try client(server.port) { try await Tokens.make() }
        let events = Collected<HeraldEvent>()
        let reader = events.run(herald.events(topics: ["currency"]))
        defer { reader.cancel() }
        #expect(await until { events.all.contains { if case .stream = $0.kind { true } else { false } } })
        let admin = try await Tokens.make(sub: "root", publish: [], subscribe: [], admin: true)
        let listed = try server.client().get("/streams", headers: Tokens.bearer(admin)).json["streams"] as? [[String: Any]] ?? []
        let id = try #require(listed.first?["stream"] as? String)
        #expect(try server.client().request("DELETE", "/streams/\(id)", headers: Tokens.bearer(admin)).status == 204)
        #expect(await until { events.error != nil }, "the sequence ends")
        #expect((events.error as? HeraldProblem)?.status == 410)
        #expect(events.all.contains { if case .other(name: "ended", _) = $0.kind { true } else { false } })
        try await Task.sleep(for: .seconds(3))
        let after = try server.client().get("/streams", headers: Tokens.bearer(admin)).json["streams"] as? [Any]
        #expect(after?.isEmpty == true, "not reopened")
    }

    /// A thousand `states` sequences in one process each see every bid of a burst, in order.
    @Test func aThousandSequencesEachSeeEveryBid() async throws {
        let herald = try HeraldProcess(arguments: HeraldProcess.unlimited)
        let client = try client(herald.port)
        let auction = try #require(try HTTPClient(port: herald.port).post("/auctions", #"{"item":"lamp","countdownSeconds":3600}"#).json["id"] as? String)
        let sequences = (0..<1_000).map { _ in Collected<Int>() }
        let readers = sequences.map { $0.run(mapped(client.auction(auction).states) { $0.price }) }
        defer { readers.forEach { $0.cancel() } }
        let opened = Date()
        #expect(await until(60) { sequences.allSatisfy { $0.all.count == 1 } }, "every sequence has its snapshot")
        print("HeraldClientTests: 1,000 snapshots in \(Date().timeIntervalSince(opened)) s")
        let burst = Date()
        for amount in 1...20 { try bid(herald.port, auction, amount) }
        let expected = [0] + Array(1...20)
        #expect(await until(60) { sequences.allSatisfy { $0.all.count >= expected.count } })
        print("HeraldClientTests: 20 bids to 1,000 in \(Date().timeIntervalSince(burst)) s")
        let wrong = sequences.filter { $0.all != expected }
        #expect(wrong.isEmpty, "\(wrong.count) sequences missed or repeated a bid: \(wrong.first?.all ?? [])")
    }
}

/// `sequence`'s elements through `transform`, as a stream of its own.
func mapped<T: Sendable, U: Sendable>(_ sequence: AsyncThrowingStream<T, any Error>,
                                      _ transform: @escaping @Sendable (T) -> U) -> AsyncThrowingStream<U, any Error> {
    AsyncThrowingStream { continuation in
        let task = Task {
            do {
                for try await element in sequence { continuation.yield(transform(element)) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
    }
}
