import CLinux
import Foundation

/// The reconnect storm (issue 29, item 2). This process starts Herald itself (`command`, on a data
/// directory), opens N subscribers to one auction, stops it with SIGTERM, starts it again on the same
/// directory, makes `bids` bids on the new one, and then has every subscriber reconnect with its
/// `Last-Event-ID` within `stormSeconds`. It reports whether each resumed exactly (the missed bids,
/// once each and in order, with no `resync` and no snapshot), when the last one caught up, and the
/// server's CPU per resumed subscriber beside its CPU per new one, both measured in this run.
struct Storm {
    struct Options {
        /// How to start Herald (it must listen on host:port); run twice, the same way.
        var command: [String]
        var log: String
        var host = "127.0.0.1"
        var port = 8080
        var subscribers = 10_000
        var bids = 100
        var rampPerSecond = 5000.0
        var stormSeconds = 1.0
        var timeoutSeconds = 60.0
        /// After the storm, how long the countdown's ticks are read to measure what one costs the server.
        var tickSeconds = 3.0
        /// Every subscriber comes from 127.0.0.2, a trusted proxy, naming its own client in
        /// `X-Forwarded-For`; otherwise each has its own loopback address.
        var proxy = false
        /// Stop and start the server between; otherwise the clients close their connections.
        var restart = true
        /// The server is nginx with nchan (Benchmarks/nchan.conf): a channel, its first message, messages.
        var nchan = false
    }

    struct Report: Encodable {
        var subscribers: [String: Int] = [:]
        var events: [String: Int] = [:]
        /// Statuses other than 200 at the first connection and at the resume, by status.
        var refused: [String: Int] = [:]
        var seconds: [String: Double] = [:]
        var server: [String: Double] = [:]
    }

    let options: Options

    func run() throws -> Report {
        var report = Report()
        let first = try launch()
        defer { if first.isRunning { first.terminate() } }
        try waitUntilReady()
        let control = BlockingHTTP(host: options.host, port: options.port)
        let auction = try control.makeSubject(nchan: options.nchan, channel: "storm\(getpid())", item: "storm")
        var loop = Loop(options: options, auction: auction)

        // New subscribers: each gets the snapshot.
        let firstStats = ProcessStats(pid: first.processIdentifier)
        var start = Date()
        let cpuBefore = firstStats.cpuSeconds
        loop.connectAll(resuming: false, ramp: options.rampPerSecond) { $0.gotSnapshot || $0.phase.isClosed }
        let newCPU = firstStats.cpuSeconds - cpuBefore
        let ticksWhileNew = loop.ticks
        report.seconds["connecting"] = Date().timeIntervalSince(start)
        let connected = loop.subscribers.count { $0.gotSnapshot && $0.status == 200 }
        report.refused.merge(loop.statuses(), uniquingKeysWith: +)

        // SIGTERM: the streams end when the drain does; the clients stay away until the restart.
        // Without a restart, the clients leave and the same server goes on.
        start = Date()
        if options.restart {
            kill(first.processIdentifier, SIGTERM)
            first.waitUntilExit()
        }
        report.seconds["stopping"] = Date().timeIntervalSince(start)
        loop.closeAll()

        let restart = Date()
        let second = options.restart ? try launch() : first
        defer { if second.isRunning { second.terminate() } }
        try waitUntilReady()
        report.seconds["restartToReady"] = Date().timeIntervalSince(restart)
        start = Date()
        let bidder = BlockingHTTP(host: options.host, port: options.port)
        var accepted = 0
        for amount in 1...options.bids {
            let status = try bidder.bid(on: auction, amount: amount, bidder: "storm", nchan: options.nchan)
            if (200..<300).contains(status) { accepted += 1 }
        }
        report.seconds["bids"] = Date().timeIntervalSince(start)

        // The storm: everyone back within `stormSeconds`, each with its Last-Event-ID.
        let secondStats = ProcessStats(pid: second.processIdentifier)
        let stormStart = Date()
        let cpuStorm = secondStats.cpuSeconds
        let ticksBeforeStorm = loop.ticks
        let bids = options.bids
        loop.connectAll(resuming: true, ramp: Double(options.subscribers) / options.stormSeconds) { $0.lastAmount >= bids || $0.phase.isClosed }
        let resumedCPU = secondStats.cpuSeconds - cpuStorm
        // The auction's countdown runs from the first bid and ticks once a second to every client that
        // is back: live events, not the cost of arriving, which the storm's window holds some of (the
        // new clients' window holds none: no bid yet). What a tick costs is measured right after, in
        // the same run, with every client back and nothing else going on.
        let ticksWhileResuming = loop.ticks - ticksBeforeStorm
        let (cpuTicks, ticksBefore) = (secondStats.cpuSeconds, loop.ticks)
        loop.read(for: options.tickSeconds)
        let ticksAfter = loop.ticks - ticksBefore
        let perTick = ticksAfter > 0 ? (secondStats.cpuSeconds - cpuTicks) / Double(ticksAfter) : 0
        let caughtUp = loop.subscribers.count { $0.lastAmount == bids }
        let lastCaughtUp = loop.caughtUpAt.max() ?? 0
        report.seconds["stormConnecting"] = loop.lastConnectAt - stormStart.timeIntervalSince1970
        report.seconds["stormToLastCaughtUp"] = lastCaughtUp > 0 ? lastCaughtUp - stormStart.timeIntervalSince1970 : -1
        report.seconds["restartToLastCaughtUp"] = lastCaughtUp > 0 ? lastCaughtUp - restart.timeIntervalSince1970 : -1
        for (status, count) in loop.statuses() { report.refused["resume \(status)", default: 0] += count }

        report.subscribers = ["requested": options.subscribers, "connected": connected, "caughtUp": caughtUp]
        report.events = [
            "bidsAccepted": accepted, "expected": connected * bids, "received": loop.subscribers.reduce(0) { $0 + $1.received },
            "lost": loop.subscribers.reduce(0) { $0 + $1.lost + (bids - $1.lastAmount) },
            "duplicated": loop.subscribers.reduce(0) { $0 + $1.duplicated },
            "outOfOrder": loop.subscribers.reduce(0) { $0 + $1.outOfOrder },
            "resyncs": loop.subscribers.reduce(0) { $0 + $1.resyncs },
            // Each got one at its first connection; any more came with a resume.
            "snapshotsOnResume": loop.subscribers.reduce(0) { $0 + max($1.snapshots - 1, 0) },
            "ticksWhileNew": ticksWhileNew, "ticksWhileResuming": ticksWhileResuming, "ticksAfter": ticksAfter,
        ]
        let perNew = connected > 0 ? newCPU / Double(connected) * 1e6 : 0
        let perResumed = caughtUp > 0 ? resumedCPU / Double(caughtUp) * 1e6 : 0
        let perResumedWithoutTicks = caughtUp > 0 ? (resumedCPU - Double(ticksWhileResuming) * perTick) / Double(caughtUp) * 1e6 : 0
        report.server = [
            "cpuMicrosecondsPerNewSubscriber": (perNew * 10).rounded() / 10,
            "cpuMicrosecondsPerResumedSubscriber": (perResumed * 10).rounded() / 10,
            "resumedOverNew": perNew > 0 ? (perResumed / perNew * 100).rounded() / 100 : 0,
            "cpuMicrosecondsPerTickSent": (perTick * 1e7).rounded() / 10,
            "cpuMicrosecondsPerResumedSubscriberWithoutTicks": (perResumedWithoutTicks * 10).rounded() / 10,
            "resumedWithoutTicksOverNew": perNew > 0 ? (perResumedWithoutTicks / perNew * 100).rounded() / 100 : 0,
        ]
        loop.closeAll()
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        return report
    }

    private func launch() throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = options.command
        guard let log = FileHandle(forWritingAtPath: options.log) ?? (FileManager.default.createFile(atPath: options.log, contents: nil)
            ? FileHandle(forWritingAtPath: options.log) : nil) else { throw BenchError("cannot write \(options.log)") }
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        return process
    }

    private func waitUntilReady() throws {
        let deadline = Date().addingTimeInterval(options.timeoutSeconds)
        while Date() < deadline {
            let path = options.nchan ? "/" : "/health/ready"
            if let status = (try? BlockingHTTP(host: options.host, port: options.port).request("GET", path))?.status,
               options.nchan ? status > 0 : status == 200 { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw BenchError("herald did not become ready on port \(options.port)")
    }

    /// The subscribers' sockets on one epoll loop.
    struct Loop {
        let options: Options
        let auction: String
        var subscribers: [Subscriber] = []
        /// When each subscriber had the last bid (seconds since 1970), 0 until then.
        var caughtUpAt: [Double]
        var lastConnectAt = 0.0
        private let epoll = cepoll_create()
        private var buffer = [UInt8](repeating: 0, count: 65536)
        private var tokens = [UInt64](repeating: 0, count: 512)
        private var bits = [UInt32](repeating: 0, count: 512)

        init(options: Options, auction: String) {
            self.options = options
            self.auction = auction
            caughtUpAt = [Double](repeating: 0, count: options.subscribers)
        }

        /// Opens (or reopens, with `Last-Event-ID`) every subscriber at `ramp` a second, then reads
        /// until each is `done` or the timeout.
        mutating func connectAll(resuming: Bool, ramp: Double, done: (Subscriber) -> Bool) {
            let start = Date()
            let deadline = start.addingTimeInterval(options.timeoutSeconds)
            var opened = 0
            while Date() < deadline {
                let due = min(options.subscribers, Int(Date().timeIntervalSince(start) * ramp) + 1)
                while opened < due {
                    let fd = connect(opened)
                    if resuming {
                        subscribers[opened] = Subscriber(fd: fd ?? -1, resuming: subscribers[opened])
                    } else {
                        subscribers.append(Subscriber(fd: fd ?? -1))
                    }
                    if let fd {
                        _ = cepoll_add(epoll, fd, CEPOLL_OUT | CEPOLL_IN | CEPOLL_RDHUP, UInt64(opened))
                    } else {
                        subscribers[opened].phase = .closed
                    }
                    opened += 1
                    if opened == options.subscribers { lastConnectAt = Date().timeIntervalSince1970 }
                }
                if opened == options.subscribers, subscribers.allSatisfy(done) { return }
                serviceReady(resuming: resuming)
            }
        }

        /// Reads whatever comes for `seconds`, connecting no one.
        mutating func read(for seconds: Double) {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end { serviceReady(resuming: true) }
        }

        /// Services each socket that is ready, after waiting up to 5 ms for one.
        private mutating func serviceReady(resuming: Bool) {
            let count = tokens.withUnsafeMutableBufferPointer { tokens in
                bits.withUnsafeMutableBufferPointer { cepoll_wait(epoll, tokens.baseAddress, $0.baseAddress, 512, 5) }
            }
            for slot in 0..<max(Int(count), 0) { service(Int(tokens[slot]), bits: bits[slot], resuming: resuming) }
        }

        private mutating func service(_ index: Int, bits: UInt32, resuming: Bool) {
            let fd = subscribers[index].fd
            if case .connecting = subscribers[index].phase {
                guard bits & (CEPOLL_ERR | CEPOLL_HUP) == 0 else {
                    subscribers[index].phase = .closed
                    _ = cepoll_remove(epoll, fd)
                    return
                }
                let request = Array(request(index, resuming: resuming).utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                subscribers[index].phase = .head
                _ = cepoll_modify(epoll, fd, CEPOLL_IN | CEPOLL_RDHUP, UInt64(index))
                return
            }
            let last = options.bids
            var reached = false
            let open = readAvailable(fd, into: &buffer) { bytes in
                subscribers[index].feed(bytes) { amount in
                    if amount == last { reached = true }
                }
            }
            if reached { caughtUpAt[index] = Date().timeIntervalSince1970 }
            if !open {
                _ = cepoll_remove(epoll, fd)
                subscribers[index].phase = .closed
            }
        }

        private func request(_ index: Int, resuming: Bool) -> String {
            let path = options.nchan ? "/sub/\(auction)" : "/auctions/\(auction)/events"
            var text = "GET \(path) HTTP/1.1\r\nHost: \(options.host):\(options.port)\r\nAccept: text/event-stream\r\n"
            if resuming, !subscribers[index].lastIdText.isEmpty {
                text += "Last-Event-ID: \(String(decoding: subscribers[index].lastIdText, as: UTF8.self))\r\n"
            }
            if options.proxy { text += "X-Forwarded-For: 10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)\r\n" }
            return text + "\r\n"
        }

        /// A non-blocking connect from the subscriber's own loopback address (127.1.1.1 on), or from
        /// the proxy's (127.0.0.2).
        private func connect(_ index: Int) -> Int32? {
            let source = options.proxy ? "127.0.0.2" : "127.\(1 + index / 62_500 % 250).\(1 + index / 250 % 250).\(1 + index % 250)"
            return connectNonBlocking(from: source, to: options.host, port: options.port)
        }

        /// `tick` events received by every subscriber so far.
        var ticks: Int { subscribers.reduce(0) { $0 + $1.ticks } }

        /// Statuses other than 200, by status ("none": no answer).
        func statuses() -> [String: Int] {
            var counts: [String: Int] = [:]
            for subscriber in subscribers where subscriber.status != 200 { counts[subscriber.answered ? String(subscriber.status) : "none", default: 0] += 1 }
            return counts
        }

        mutating func closeAll() {
            for index in subscribers.indices where subscribers[index].fd >= 0 {
                _ = cepoll_remove(epoll, subscribers[index].fd)
                close(subscribers[index].fd)
                subscribers[index].phase = .closed
            }
        }
    }
}

extension Subscriber.Phase {
    var isClosed: Bool { if case .closed = self { true } else { false } }
}
