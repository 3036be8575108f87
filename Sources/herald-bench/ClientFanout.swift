import Foundation
import HeraldClient
import Synchronization

/// The fan-out through `HeraldClient` (`--herald-client`): N `auction(id).states` sequences in this
/// process, M bids; what the client costs per received event and per open sequence, to set beside
/// the raw subscribers of `Fanout`, whose hand-written parser is the floor.
struct ClientFanout {
    let options: Fanout.Options

    func run() throws -> Fanout.Report {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Fanout.Report, any Error>?>(nil)
        Task {
            do {
                let report = try await measure()
                result.withLock { $0 = .success(report) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
        return try outcome.get()
    }

    private func measure() async throws -> Fanout.Report {
        guard let url = URL(string: "http://\(options.host):\(options.port)") else { throw HeraldProblem(title: "Bad address", status: 400, detail: options.host) }
        let client = HeraldClient(url: url)
        let server = ProcessStats(pid: options.pid)
        let me = ProcessStats(pid: getpid())
        var created: String?
        if options.auction == nil { created = try await client.createAuction(item: "bench", countdownSeconds: 3600).id }
        let auction = options.auction ?? created ?? ""
        var report = Fanout.Report()
        let counts = Counts()
        let myRSSBefore = me.rssKiB
        let serverRSSBefore = server.rssKiB
        let started = Date()
        let events = options.events
        let readers = (0..<options.subscribers).map { _ in
            Task { [counts] in
                        var last: Int?
                for try await state in client.auction(auction).states {
                    if last == nil {
                        counts.snapshots.add(1, ordering: .relaxed)
                    } else {
                        counts.received.add(1, ordering: .relaxed)
                        if state.price == (last ?? 0) + 1 { counts.inOrder.add(1, ordering: .relaxed) }
                    }
                    last = state.price
                    if state.price >= events { return }
                }
            }
        }
        let deadline = Date().addingTimeInterval(options.timeoutSeconds)
        while counts.snapshots.load(ordering: .relaxed) < options.subscribers, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        report.seconds["connecting"] = Date().timeIntervalSince(started)
        let connected = counts.snapshots.load(ordering: .relaxed)
        report.subscribers = ["requested": options.subscribers, "connected": connected]
        let myRSSHeld = me.rssKiB
        report.client["rssKiBPerSubscriber"] = connected > 0 ? (Double(myRSSHeld - myRSSBefore) / Double(connected) * 100).rounded() / 100 : 0
        report.client["rssKiBHeld"] = Double(myRSSHeld)
        report.server["rssKiBPerSubscriber"] = connected > 0 ? (Double(server.rssKiB - serverRSSBefore) / Double(connected) * 100).rounded() / 100 : 0

        let myCPUStart = me.cpuSeconds
        let serverCPUStart = server.cpuSeconds
        let burst = Date()
        // The bids go on this process's own HTTP client, as Fanout's do.
        for amount in 1...events {
            try await client.bid(on: auction, amount: amount, bidder: "bench")
            try await Task.sleep(for: .milliseconds(Int(options.intervalMilliseconds)))
        }
        let expected = connected * events
        while counts.received.load(ordering: .relaxed) < expected, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let myCPU = me.cpuSeconds - myCPUStart
        let serverCPU = server.cpuSeconds - serverCPUStart
        let delivered = counts.received.load(ordering: .relaxed)
        report.burstSeconds = Date().timeIntervalSince(burst)
        report.events = ["expected": expected, "received": delivered, "inOrder": counts.inOrder.load(ordering: .relaxed)]
        report.client["cpuSecondsPublishing"] = myCPU
        report.client["cpuMicrosecondsPerReceivedEvent"] = delivered > 0 ? (myCPU / Double(delivered) * 1e7).rounded() / 10 : 0
        report.server["cpuSecondsPublishing"] = serverCPU
        report.serverCpuMicrosecondsPerDeliveredEvent = delivered > 0 ? (serverCPU / Double(delivered) * 1e7).rounded() / 10 : 0
        readers.forEach { $0.cancel() }
        return report
    }
}

/// What the sequences saw, counted from their tasks.
final class Counts: Sendable {
    let received = Atomic<Int>(0)
    let snapshots = Atomic<Int>(0)
    let inOrder = Atomic<Int>(0)
}
