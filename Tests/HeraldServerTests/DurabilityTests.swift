import CSQLite
import Foundation
import HeraldCore
import HeraldDomain
@testable import HeraldServer
import HeraldTestSupport
import HeraldThreads
import Synchronization
import Testing

/// A fresh data directory under the system's temporary one.
func temporaryDataDirectory() -> String { temporaryDirectory("herald-data") }

@Suite struct RestartTests {
    @Test func stateSequenceAndReplaySurviveARestart() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        var before: [String: String] = [:]
        var lastId = ""
        var idBeforeBids = ""
        do {
            let server = try TestHerald(examples: true, dataDirectory: directory)
            defer { server.stop() }
            let client = server.client()
            let auction = try server.auction(countdown: 3600, startingPrice: 10)
            let first = try server.stream("/auctions/\(auction)/events")
            idBeforeBids = try #require(try first.next().id)
            _ = try client.post("/auctions/\(auction)/bids", #"{"bidder":"ann","amount":10}"#)
            _ = try client.post("/auctions/\(auction)/bids", #"{"bidder":"bob","amount":12}"#)
            _ = try client.put("/currency", #"{"default":"gramGold"}"#)
            _ = try client.put("/units/medic", #"{"name":"Medic","status":"wounded"}"#)
            _ = try client.request("DELETE", "/units/scout")
            _ = try client.post("/trips/1/delay", #"{"deltaSeconds":120}"#)
            lastId = try #require(try client.post("/notifications/ping", #"{}"#).json["id"] as? String)
            for path in ["/auctions", "/auctions/\(auction)/bids", "/currency", "/units", "/trips", "/subjects"] {
                before[path] = try client.get(path).text
            }
            first.close()
            // Nobody watches: /subjects lists what it listed, with its observer gone.
            #expect(eventually { (try? server.observers(of: "auctions/\(auction)")) == 0 })
            before["/subjects"] = try client.get("/subjects").text
        }
        let server = try TestHerald(examples: true, dataDirectory: directory)
        defer { server.stop() }
        let client = server.client()
        let currency = (try client.get("/subjects").json["subjects"] as? [[String: Any]])?.first { $0["topic"] as? String == "currency" }
        #expect(currency?["lastEventId"] as? String != "0", "each subject keeps its last event id across a restart: \(String(describing: currency))")
        for (path, text) in before {
            let after = try client.get(path).text
            #expect(after == text, "\(path) after the restart")
        }
        let replay = try server.stream("/units/events", headers: [("Last-Event-ID", "0")])
        #expect(try replay.next(3).map(\.event) == ["unit", "unit", "left"], "the whole history is kept")
        let auction = try server.stream("/auctions/2/events", headers: [("Last-Event-ID", idBeforeBids)])
        #expect(try auction.next(2).compactMap { ($0.json["bid"] as? [String: Any])?["bidder"] as? String } == ["ann", "bob"])
        let next = try #require(try client.post("/notifications/ping", #"{}"#).json["id"] as? String)
        #expect(UInt64(next) == (UInt64(lastId) ?? 0) + 1, "the sequence continues, never reused")
    }

    @Test func aCountdownRunningAtShutdownResumesWithTheTimeLeft() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let clock = ManualClock()
        let id: String
        do {
            let server = try TestHerald(clock: clock, dataDirectory: directory)
            defer { server.stop() }
            id = try server.auction(countdown: 10)
            _ = try server.client().post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":1}"#)
            clock.advance(by: 4)
        }
        clock.advance(by: 3)
        let server = try TestHerald(clock: clock, dataDirectory: directory)
        defer { server.stop() }
        #expect(try server.client().get("/auctions/\(id)").json["remainingSeconds"] as? Int == 3)
        let stream = try server.stream("/auctions/\(id)/events?snapshot=false")
        clock.advance(by: 3)
        let events = try stream.next(3)
        #expect(events.map(\.event) == ["tick", "tick", "closed"])
        #expect(events.last?.json["winner"] as? String == "ann")
    }

    @Test func eventsOlderThanTheKeptDaysArePrunedAndTheirIdsGetAResync() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock, temporaryStore: true, historyDays: 1)
        defer { server.stop() }
        let client = server.client()
        let old = try #require(try client.put("/units/a", #"{"name":"A","status":"healthy"}"#).status == 201 ? server.herald.hub.lastEventId : nil)
        _ = try client.put("/units/a", #"{"name":"A","status":"wounded"}"#)
        let replay = try server.stream("/units/a/events", headers: [("Last-Event-ID", String(old))])
        #expect(try replay.next().event == "unit", "kept while young")
        clock.advance(by: 2 * 86_400)  // the pruning timer runs every minute of it
        _ = try client.put("/units/a", #"{"name":"A","status":"dead"}"#)
        let late = try server.stream("/units/a/events", headers: [("Last-Event-ID", String(old))])
        #expect(try late.next(2).map(\.event) == ["resync", "snapshot"], "pruned by age: too old to replay")
        let recent = try server.stream("/units/a/events", headers: [("Last-Event-ID", String(server.herald.hub.lastEventId - 1))])
        #expect(try recent.next().event == "unit", "the newest event is still kept")
    }

    @Test func pruningNeitherDropsNewEventsNorOutlivesStop() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock, temporaryStore: true, historyDays: 1)
        defer { server.stop() }
        let client = server.client()
        _ = try client.put("/units/a", #"{"name":"A","status":"healthy"}"#)
        clock.advance(by: 2 * 86_400)  // everything is pruned by age
        let before = server.herald.hub.lastEventId
        _ = try client.put("/units/a", #"{"name":"A","status":"dead"}"#)
        clock.advance(by: 60)  // a prune with a young event in the store
        let replay = try server.stream("/units/a/events", headers: [("Last-Event-ID", String(before))])
        #expect(try replay.next().event == "unit", "the event after the prune is still replayed")
        server.stop()
        let pending = clock.pendingTimers
        clock.advance(by: 600)
        #expect(clock.pendingTimers <= pending, "no pruning timer arms after stop")
    }

    @Test func anUnusableDataDirectoryStopsTheServerWithAMessage() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: directory + "/herald.sqlite3"))
        let process = Process()
        process.executableURL = heraldExecutable()
        process.arguments = ["--port", "0", "--data-dir", directory]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(message.contains("not a Herald database"))
    }
}

/// `kill -9` in the middle of a thousand mutations: what was acknowledged is there after the restart.
@Suite(.serialized) struct CrashTests {
    /// What one client had acknowledged before the crash.
    struct Acknowledged: Sendable {
        var units: [String] = []
        var bids: [Int] = []
        var notifications: [UInt64] = []
        var trips = 0
    }

    @Test func everyAcknowledgedMutationSurvivesAKill() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        var herald = try HeraldProcess(arguments: ["--no-examples"] + HeraldProcess.unlimited, dataDirectory: directory)
        let setup = HTTPClient(port: herald.port)
        let clients = 8
        var auctions: [String] = []
        var trips: [String] = []
        for _ in 0..<clients {
            auctions.append(try #require(try setup.post("/auctions", #"{"item":"crash","countdownSeconds":3600}"#).json["id"] as? String))
            trips.append(try #require(try setup.post("/trips", #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z"}"#).json["id"] as? String))
        }
        let watermark = try #require(try setup.post("/notifications/crash", #"{}"#).json["id"] as? String)
        let acknowledged = Lock([Acknowledged](repeating: Acknowledged(), count: clients))
        let total = Atomic<Int>(0)
        let port = herald.port
        let done = DispatchGroup()
        let (auctionIds, tripIds) = (auctions, trips)
        for index in 0..<clients {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let client = HTTPClient(port: port)
                var n = 0
                while n < 5_000 {
                    n += 1
                    do {
                        switch n % 4 {
                        case 0:
                            let id = "c\(index)-\(n)"
                            guard try client.put("/units/\(id)", #"{"name":"\#(id)","status":"healthy"}"#).status == 201 else { return }
                            acknowledged.withLock { $0[index].units.append(id) }
                        case 1:
                            guard try client.post("/auctions/\(auctionIds[index])/bids", #"{"bidder":"c\#(index)","amount":\#(n)}"#).status == 201 else { return }
                            acknowledged.withLock { $0[index].bids.append(n) }
                        case 2:
                            let response = try client.post("/notifications/crash", #"{"object":"c\#(index)"}"#)
                            guard response.status == 202, let id = (response.json["id"] as? String).flatMap(UInt64.init) else { return }
                            acknowledged.withLock { $0[index].notifications.append(id) }
                        default:
                            guard try client.post("/trips/\(tripIds[index])/delay", #"{"deltaSeconds":1}"#).status == 200 else { return }
                            acknowledged.withLock { $0[index].trips += 1 }
                        }
                        total.add(1, ordering: .relaxed)
                    } catch {
                        return  // the server is gone
                    }
                }
            }
        }
        #expect(eventually(timeout: 60) { total.load(ordering: .relaxed) >= 1_200 })
        kill(herald.process.processIdentifier, SIGKILL)
        herald.process.waitUntilExit()
        #expect(done.wait(timeout: .now() + 30) == .success)
        let acks = acknowledged.withLock { $0 }
        #expect(acks.reduce(0) { $0 + $1.units.count + $1.bids.count + $1.notifications.count + $1.trips } >= 1_000)

        herald = try HeraldProcess(arguments: ["--no-examples"] + HeraldProcess.unlimited, dataDirectory: directory)
        let client = HTTPClient(port: herald.port)
        let units = Set(try client.all("/units", "units").compactMap { $0["id"] as? String })
        for (index, ack) in acks.enumerated() {
            #expect(Set(ack.units).isSubset(of: units), "client \(index): every acknowledged unit")
            let bids = try client.all("/auctions/\(auctions[index])/bids", "bids").compactMap { $0["amount"] as? Int }
            #expect(Set(ack.bids).isSubset(of: Set(bids)), "client \(index): every acknowledged bid")
            let delay = try client.get("/trips/\(trips[index])").json["delaySeconds"] as? Int ?? -1
            #expect(delay >= ack.trips && delay <= ack.trips + 1, "client \(index): the acknowledged delays (and at most the one in flight)")
        }
        // Replay from before the crash: exactly the notifications after the watermark, in order, none twice.
        let acknowledgedIds = Set(acks.flatMap(\.notifications))
        let stream = try SSEClient(port: herald.port, path: "/notifications/crash/events", headers: [("Last-Event-ID", watermark)])
        var replayed: [UInt64] = []
        while let event = try? stream.next(timeout: 2) { replayed.append(UInt64(event.id ?? "") ?? 0) }
        #expect(replayed == replayed.sorted() && Set(replayed).count == replayed.count, "in order, no duplicates")
        #expect(acknowledgedIds.isSubset(of: Set(replayed)), "every acknowledged notification is replayed")
        #expect(replayed.count <= acknowledgedIds.count + clients, "nothing but them and at most one in flight per client")

        let next = try #require((try client.post("/notifications/crash", #"{}"#).json["id"] as? String).flatMap(UInt64.init))
        #expect(next > (replayed.max() ?? 0), "the sequence continues after the crash")
    }
}

@Suite struct DamagedStoreTests {
    @Test func aRecordThatIsNotJSONStopsTheStartWithAMessage() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        try TestHerald(examples: true, dataDirectory: directory).stop()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE records SET document = X'7B7B' WHERE kind = 'unit'\"); c.commit()",
                             directory + "/herald.sqlite3"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect { try TestHerald(dataDirectory: directory) } throws: { "\($0)".contains("the stored unit 'scout' is not JSON") }
    }
}

/// Another process holding SQLite's write lock.
@Suite struct LockedStoreTests {
    @Test func aLockedStoreIsA503ThatNamesTheRequestNotTheDatabase() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        var other: OpaquePointer?
        #expect(sqlite3_open(directory + "/herald.sqlite3", &other) == SQLITE_OK)
        defer { sqlite3_close(other) }
        #expect(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
        // Answered (the store waits 200 ms for its lock, then refuses), not left hanging.
        let refused = try server.client().put("/units/a", #"{"name":"A","status":"healthy"}"#)
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        let detail = refused.json["detail"] as? String ?? ""
        #expect(!detail.contains("lock") && !detail.contains("SQLite") && !detail.contains("database"), "\(detail)")
        #expect((refused.json["requestId"] as? String)?.isEmpty == false)
        _ = sqlite3_exec(other, "ROLLBACK", nil, nil, nil)
        #expect(try server.client().put("/units/a", #"{"name":"A","status":"healthy"}"#).status == 201)
        #expect(try server.client().get("/units/a").status == 200)
    }
}

/// A countdown's ticks are news of the moment: delivered live, never stored, never replayed.
@Suite struct TransientTickTests {
    /// Rows of the stored event log named `name`, read by a connection of the test's own.
    static func storedEvents(named name: String, in directory: String) throws -> Int {
        var database: OpaquePointer?
        guard sqlite3_open_v2(directory + "/herald.sqlite3", &database, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            throw TestError("cannot open the store")
        }
        defer { sqlite3_close(database) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, "SELECT count(*) FROM events WHERE name = ?", -1, &statement, nil) == SQLITE_OK else {
            throw TestError("cannot read the store")
        }
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_text(statement, 1, name, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        guard sqlite3_step(statement) == SQLITE_ROW else { throw TestError("cannot count") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    @Test func ticksCarryNoIdTakeNoPlaceAndAreNeverReplayed() throws {
        let clock = ManualClock()
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        let server = try TestHerald(clock: clock, dataDirectory: directory)
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction(countdown: 5)
        let live = try server.stream("/auctions/\(id)/events")
        let before = try #require(try live.next().id, "the snapshot's position")
        let bid = try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":10}"#)
        let deadline = try #require((bid.json["auction"] as? [String: Any])?["deadline"] as? String)
        #expect(deadline == Timestamp.format(clock.now.addingTimeInterval(5)), "a bid tells when the countdown ends")
        let bidEvent = try live.next()
        #expect(bidEvent.event == "bid")
        clock.advance(by: 1)
        clock.advance(by: 1)
        let ticks = try live.next(2)
        #expect(ticks.map(\.event) == ["tick", "tick"])
        #expect(ticks.allSatisfy { $0.id == nil }, "a tick leaves the client's last event id where it was")
        #expect(ticks.compactMap { $0.json["deadline"] as? String } == [deadline, deadline])
        #expect(try client.get("/health").json["lastEventId"] as? String == bidEvent.id, "ticks take no sequence number")
        #expect(try Self.storedEvents(named: "tick", in: directory) == 0)
        #expect(try Self.storedEvents(named: "bid", in: directory) == 1)

        let replay = try server.stream("/auctions/\(id)/events", headers: [("Last-Event-ID", before)])
        _ = try client.post("/auctions/\(id)/bids", #"{"bidder":"bob","amount":11}"#)
        let replayed = try replay.next(2)
        #expect(replayed.map(\.event) == ["bid", "bid"], "the missed bid, then the next live one: no stale ticks")
        #expect(replayed.compactMap { ($0.json["bid"] as? [String: Any])?["bidder"] as? String } == ["ann", "bob"])
        let snapshot = try server.stream("/auctions/\(id)/events").next()
        #expect((snapshot.json["auction"] as? [String: Any])?["remainingSeconds"] as? Int == 5, "the current state, as of the last tick or bid")
    }
}
