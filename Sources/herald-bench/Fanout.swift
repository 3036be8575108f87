import CLinux
import Foundation
import Synchronization

/// The fan-out measurement: N subscribers on one epoll loop, M bids on a fixed schedule from another thread.
struct Fanout {
    struct Options {
        var host = "127.0.0.1"
        var port = 8080
        var pid: Int32
        var subscribers = 1000
        var events = 50
        var intervalMilliseconds = 20.0
        var rampPerSecond = 5000.0
        var sources = 4
        var idleSeconds = 5.0
        var timeoutSeconds = 120.0
        var auction: String?
        /// Instead of publishing: hold the subscribers this long, reading whatever arrives.
        var holdSeconds: Double?
        /// Send all the bids at once on one connection (pipelined), then read the answers.
        var pipelined = false
        /// Send the bids (and create the auction) on this port: another replica of the same store.
        var bidPort: Int?
        /// Subscribe here instead of the auction's stream (a lobby: `/auctions/events?status=open`).
        var path: String? = nil
        /// Auctions to create and bid on in turn (bid k goes to auction k mod spread, amount k).
        var spread = 1
        /// The server is nginx with nchan (Benchmarks/nchan.conf), the peer: an auction is a channel,
        /// made by publishing its first message (the `snapshot`), and a bid is a message on it.
        var nchan = false
        /// With `nchan`: subscribe at /sub-new/ID, without the stored message (arrival is the head and `: hi`).
        var nchanWithoutMessage = false
        /// While the bids go, read without sleeping (`epoll_wait` with a zero timeout).
        var busyPoll = false
    }

    struct Report: Encodable {
        var subscribers: [String: Int] = [:]
        var events: [String: Int] = [:]
        var latencyMilliseconds: Distribution?
        var lastSubscriberMilliseconds: Distribution?
        /// From sending a bid to its answer's last byte (one bid at a time on a keep-alive connection).
        var bidResponseMilliseconds: Distribution?
        /// How the threads that send the bids and time their answers were scheduled (`timingThread`).
        var bidThreads = "ordinary"
        var bids: [String: Int] = [:]
        var burstSeconds = 0.0
        var deliveredPerSecond = 0.0
        var server: [String: Double] = [:]
        /// This process: what reading the streams cost the client (it also sends the bids).
        var client: [String: Double] = [:]
        var serverCpuMicrosecondsPerDeliveredEvent = 0.0
        var seconds: [String: Double] = [:]
    }

    let options: Options

    func run() throws -> Report {
        let server = ProcessStats(pid: options.pid)
        let me = ProcessStats(pid: getpid())
        let control = BlockingHTTP(host: options.host, port: options.bidPort ?? options.port)
        var made = 0
        func create() throws -> String {
            made += 1
            return try control.makeSubject(nchan: options.nchan, channel: "bench\(getpid())x\(made)", item: "bench")
        }
        let auction = try options.auction ?? create()
        // Bid k goes to auctions[k % count] with amount k: every auction's bids rise, and a lobby
        // observer sees amounts 1, 2, 3 … in order, as one auction's observer does.
        let auctions = try [auction] + (1..<options.spread).map { _ in try create() }
        if options.bidPort != nil {
            // Made on the other replica: wait until this one has it.
            let watched = BlockingHTTP(host: options.host, port: options.port)
            let deadline = Date().addingTimeInterval(options.timeoutSeconds)
            while (try? watched.request("GET", "/auctions/\(auction)", json: nil))?.status != 200 {
                guard Date() < deadline else { throw BenchError("the auction never reached port \(options.port)") }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        var report = Report()
        let rssBefore = server.rssKiB
        let myRSSBefore = me.rssKiB
        let cpuBefore = server.cpu
        let epoll = cepoll_create()
        defer { close(epoll) }
        var subscribers: [Subscriber] = []
        subscribers.reserveCapacity(options.subscribers)
        var connectFailures = 0
        let stream = options.path ?? (options.nchan ? "/\(options.nchanWithoutMessage ? "sub-new" : "sub")/\(auction)" : "/auctions/\(auction)/events")
        let request = Array("GET \(stream) HTTP/1.1\r\nHost: \(options.host)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        var tokens = [UInt64](repeating: 0, count: 512)
        var bits = [UInt32](repeating: 0, count: 512)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var snapshots = 0
        var deliveries = 0
        let first = Date()
        var receiveTimes = [Double](repeating: 0, count: options.events + 1)  // latest delivery of each bid
        var latencies: [Double] = []
        latencies.reserveCapacity(options.subscribers * options.events)
        let sendTimes = SendTimes(count: options.events + 1)
        let clock = { Date().timeIntervalSince1970 }

        /// One pass of the loop: connect more (while ramping), read what is ready.
        func pump(timeoutMs: Int32) {
            let due = min(options.subscribers, Int(Date().timeIntervalSince(first) * options.rampPerSecond) + 1)
            while subscribers.count + connectFailures < due {
                let index = subscribers.count
                guard let fd = connectNonBlocking(from: "127.0.0.\(1 + index % max(options.sources, 1))", to: options.host, port: options.port) else {
                    connectFailures += 1
                    continue
                }
                subscribers.append(Subscriber(fd: fd, arrivesAtAnyEvent: options.nchanWithoutMessage))
                _ = cepoll_add(epoll, fd, CEPOLL_OUT | CEPOLL_IN | CEPOLL_RDHUP, UInt64(index))
            }
            let count = tokens.withUnsafeMutableBufferPointer { tokens in
                bits.withUnsafeMutableBufferPointer { cepoll_wait(epoll, tokens.baseAddress, $0.baseAddress, 512, timeoutMs) }
            }
            guard count > 0 else { return }
            for slot in 0..<Int(count) {
                let index = Int(tokens[slot])
                let fd = subscribers[index].fd
                if case .connecting = subscribers[index].phase {
                    guard bits[slot] & (CEPOLL_ERR | CEPOLL_HUP) == 0 else {
                        subscribers[index].phase = .closed
                        _ = cepoll_remove(epoll, fd)
                        continue
                    }
                    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    subscribers[index].phase = .head
                    _ = cepoll_modify(epoll, fd, CEPOLL_IN | CEPOLL_RDHUP, UInt64(index))
                    continue
                }
                let open = readAvailable(fd, into: &buffer) { bytes in
                    let now = clock()
                    let hadSnapshot = subscribers[index].gotSnapshot
                    subscribers[index].feed(bytes) { amount in
                        deliveries += 1
                        guard amount <= options.events else { return }
                        receiveTimes[amount] = max(receiveTimes[amount], now)
                        let sent = sendTimes[amount]
                        if sent > 0 { latencies.append((now - sent) * 1000) }
                    }
                    if !hadSnapshot, subscribers[index].gotSnapshot { snapshots += 1 }
                }
                if !open {
                    _ = cepoll_remove(epoll, fd)
                    subscribers[index].phase = .closed
                }
            }
        }

        // Connect everyone and wait for every snapshot.
        let connectDeadline = Date().addingTimeInterval(options.timeoutSeconds)
        func deadWithoutSnapshot() -> Int { subscribers.count { if case .closed = $0.phase { !$0.gotSnapshot } else { false } } }
        while subscribers.count + connectFailures < options.subscribers || snapshots + deadWithoutSnapshot() < subscribers.count,
              Date() < connectDeadline {
            pump(timeoutMs: 10)
        }
        let connected = subscribers.count { $0.gotSnapshot }
        report.seconds["connecting"] = Date().timeIntervalSince(first)
        let rssHeld = server.rssKiB
        let myRSSHeld = me.rssKiB
        let cpuSplitConnected = server.cpu
        let cpuConnected = cpuSplitConnected.user + cpuSplitConnected.system
        report.server["threads"] = Double(server.threads)

        // Idle: heartbeats only.
        let idleStart = Date()
        while Date().timeIntervalSince(idleStart) < options.idleSeconds { pump(timeoutMs: 100) }
        let cpuIdle = server.cpuSeconds - cpuConnected
        report.subscribers = ["requested": options.subscribers, "connected": connected, "failed": options.subscribers - connected]
        report.client["rssKiBPerSubscriber"] = connected > 0 ? (Double(myRSSHeld - myRSSBefore) / Double(connected) * 100).rounded() / 100 : 0
        report.server["rssKiBBefore"] = Double(rssBefore)
        report.server["rssKiBHeld"] = Double(rssHeld)
        report.server["rssKiBPerSubscriber"] = connected > 0 ? (Double(rssHeld - rssBefore) / Double(connected) * 100).rounded() / 100 : 0
        report.server["cpuSecondsConnecting"] = cpuConnected - cpuBefore.user - cpuBefore.system
        report.server["cpuSecondsConnectingInKernel"] = cpuSplitConnected.system - cpuBefore.system
        report.server["cpuSecondsIdle"] = cpuIdle
        report.server["idleCpuFractionOfCore"] = options.idleSeconds > 0 ? cpuIdle / options.idleSeconds : 0

        if let hold = options.holdSeconds {
            let holdStart = Date()
            let cpuHoldStart = server.cpuSeconds
            while Date().timeIntervalSince(holdStart) < hold { pump(timeoutMs: 50) }
            report.events = ["received": deliveries]
            report.server["cpuSecondsHolding"] = server.cpuSeconds - cpuHoldStart
            for subscriber in subscribers { close(subscriber.fd) }
            return report
        }

        // Publish M bids from another thread while this one reads.
        let publishStart = clock()
        let publisherDone = Atomic<Bool>(false)
        let (host, port, events, interval) = (options.host, options.bidPort ?? options.port, options.events, options.intervalMilliseconds)
        let bidTimes = Mutex<[Double]>([])
        let answers = Mutex((answered: 0, accepted: 0))
        let pipelined = options.pipelined
        let nchan = options.nchan
        if pipelined, auctions.count != 1 { fatalError("--pipelined bids on one auction") }
        // Bids on a fixed schedule, bid k at (k - 1) × interval from the first, answered or not (with
        // --pipelined, all at once): a server that answers a publish only after its fan-out (nchan does)
        // gets the same rate as one that answers first. One connection, pipelined, so the bids arrive in order.
        Thread.detachNewThread {
            // The bids are sent and their answers timed on threads that share their core with the busy
            // reader: ahead of it, the timing is the server's, not the wait for the core (`timingThread`).
            timingThread()
            let client = BlockingHTTP(host: host, port: port)
            let first = Date().timeIntervalSince1970
            try? client.schedule(events, due: { pipelined ? first : first + Double($0 - 1) * interval / 1000 }, request: { amount in
                client.bidRequest(on: auctions[amount % auctions.count], amount: amount, bidder: "bench", nchan: nchan)
            }, sent: { amount, time in
                sendTimes[amount] = time
            }, answered: { amount, status in
                let took = (Date().timeIntervalSince1970 - sendTimes[amount]) * 1000
                bidTimes.withLock { $0.append(took) }
                answers.withLock { answers in
                    answers.answered += 1
                    if (200..<300).contains(status) { answers.accepted += 1 }
                }
            }, timeout: 30)
            publisherDone.store(true, ordering: .releasing)
        }
        let cpuPublishStart = server.cpuSeconds
        let loopsPublishStart = server.threadCPUSeconds(named: "herald-streams")
        let myCPUPublishStart = me.cpuSeconds
        let expected = connected * options.events
        let deadline = Date().addingTimeInterval(options.timeoutSeconds)
        // A reader asleep in epoll_wait is woken by each send, from the server's core: on a VM an
        // interrupt between cores for nearly every send when the reader keeps up (10,000 subscribers at
        // 5 bids a second: 109,000 of them for 140,000 sends, and 20.5 µs of server CPU a send against
        // 18 without them).
        let publishWait: Int32 = options.busyPoll ? 0 : 5
        while deliveries < expected || !publisherDone.load(ordering: .acquiring), Date() < deadline { pump(timeoutMs: publishWait) }
        let publishEnd = deliveries > 0 ? (receiveTimes.max() ?? clock()) : clock()
        let cpuPublish = server.cpuSeconds - cpuPublishStart
        let myCPUPublish = me.cpuSeconds - myCPUPublishStart

        let sent = sendTimes.all
        report.subscribers["closedDuringRun"] = subscribers.count { if case .closed = $0.phase { $0.gotSnapshot } else { false } }
        report.events = [
            "expected": expected, "received": deliveries,
            "lost": subscribers.reduce(0) { $0 + $1.lost + (($1.gotSnapshot ? options.events : 0) - $1.lastAmount) },
            "duplicated": subscribers.reduce(0) { $0 + $1.duplicated }, "outOfOrder": subscribers.reduce(0) { $0 + $1.outOfOrder },
            // A countdown's ticks received (not counted as delivered): work the server did beside the bids.
            "ticks": subscribers.reduce(0) { $0 + $1.ticks },
        ]
        report.latencyMilliseconds = Distribution(latencies)
        report.bidResponseMilliseconds = Distribution(bidTimes.withLock { $0 })
        answers.withLock { report.bids = ["sent": options.events, "answered": $0.answered, "accepted": $0.accepted] }
        report.bidThreads = timingThreadClass.withLock { $0 }
        report.lastSubscriberMilliseconds = Distribution((1...options.events).compactMap { k in
            receiveTimes[k] > 0 && sent[k] > 0 ? (receiveTimes[k] - sent[k]) * 1000 : nil
        })
        report.burstSeconds = publishEnd - publishStart
        report.deliveredPerSecond = (Double(deliveries) / max(publishEnd - publishStart, 0.001)).rounded()
        report.server["cpuSecondsPublishing"] = cpuPublish
        // Each stream-engine loop's share (Herald only; none for nchan).
        for (loop, seconds) in server.threadCPUSeconds(named: "herald-streams") {
            report.server["cpuSecondsPublishing:\(loop)"] = seconds - (loopsPublishStart[loop] ?? 0)
        }
        report.client["cpuSecondsPublishing"] = myCPUPublish
        report.client["cpuMicrosecondsPerReceivedEvent"] = deliveries > 0 ? (myCPUPublish / Double(deliveries) * 1e7).rounded() / 10 : 0
        report.serverCpuMicrosecondsPerDeliveredEvent = deliveries > 0 ? (cpuPublish / Double(deliveries) * 1e7).rounded() / 10 : 0
        for subscriber in subscribers where subscriber.fd >= 0 { close(subscriber.fd) }
        return report
    }
}

/// When each bid was sent, written by the bidding thread and read by the others without a lock: with
/// one, the real-time bidder could find it held by the reader it had just preempted on their shared
/// core, and wait for that reader to run again, inside the bid's timing.
final class SendTimes: @unchecked Sendable {
    // Unchecked: each slot is an atomic, written once by one thread.
    private let slots: UnsafeMutablePointer<Atomic<UInt64>>
    let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: count)
        for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    subscript(index: Int) -> Double {
        get { Double(bitPattern: slots[index].load(ordering: .acquiring)) }
        set { slots[index].store(newValue.bitPattern, ordering: .releasing) }
    }

    var all: [Double] { (0..<count).map { self[$0] } }
}

/// How the last timing thread was scheduled: "realtime", "nice -10" or "ordinary".
let timingThreadClass = Mutex("ordinary")

/// Puts the calling thread, one that sends bids or times their answers, ahead of the reader on its
/// core: real-time (`SCHED_FIFO`) where allowed (root), else nice −10. Nice alone is not enough: the
/// kernel (EEVDF, RUN_TO_PARITY) lets the busy reader finish its slice, up to a 4 ms tick, before a
/// woken thread of any nice value runs, and that wait counted as the server's answer time (a bid
/// answered in 0.5 ms, its answer read 4.5 ms later).
func timingThread() {
    let how = clinux_realtime_this_thread(1) == 0 ? "realtime" : clinux_nice_this_thread(-10) == 0 ? "nice -10" : "ordinary"
    timingThreadClass.withLock { $0 = how }
}
