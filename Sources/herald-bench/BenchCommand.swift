import ArgumentParser
import Foundation

/// `herald-bench`: measures a running Herald from outside, and prints one JSON report.
@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench",
        abstract: "Fan-out benchmark: N SSE subscribers on one auction, M bids, one JSON report.",
        discussion: "Needs nothing but a running herald (its PID for memory and CPU). Benchmarks/run runs it for every figure of docs/performance.md.")

    @Option(help: "Herald's address.") var host = "127.0.0.1"
    @Option(help: "Herald's port.") var port = 8080
    @Option(help: "Herald's process id, for RSS and CPU from /proc (not with --storm, which starts Herald itself).") var pid: Int32?
    @Option(help: "SSE subscribers to open.") var subscribers = 1000
    @Option(help: "Bids to publish.") var events = 50
    @Option(help: "Milliseconds between bids, on a fixed schedule: bid k is sent (k - 1) × this after the first, answered or not.") var intervalMs = 20.0
    @Option(help: "New subscribers per second while ramping up.") var ramp = 5000.0
    @Option(help: "Loopback source addresses to spread subscribers over (127.0.0.1, .2, …).") var sources = 4
    @Option(help: "Seconds to measure idle CPU with everyone connected.") var idleSeconds = 5.0
    @Option(help: "Seconds any phase may take.") var timeout = 120.0
    @Option(help: "Bid on this auction instead of creating one.") var auction: String?
    @Option(help: "Publish nothing: hold the subscribers this many seconds (while something else publishes).")
    var holdSeconds: Double?
    @Flag(help: "Send every bid at once on one connection (pipelined), then read the answers.")
    var pipelined = false
    @Flag(help: "While the bids go, read the streams without sleeping (epoll_wait with no timeout): a server's sends then never wake a sleeping reader on another core, which on a VM costs each send an interrupt between its cores.")
    var busyPoll = false
    @Option(help: "Subscribe here instead of the auction's stream, such as /auctions/events?status=open (a lobby).")
    var path: String?
    @Option(help: "Create this many auctions and spread the bids over them, in turn.")
    var spread = 1
    @Option(help: "Create the auction and send the bids on this port: another Herald replica on the same database (subscribers stay on --port).")
    var bidPort: Int?

    @Flag(help: "The server is nginx with nchan (Benchmarks/nchan.conf), the peer: subscribe at /sub/ID, publish at /pub/ID.")
    var nchan = false
    @Flag(help: "With --nchan: subscribe without the channel's stored message (/sub-new/ID); arrival is the head and nchan's `: hi`.")
    var nchanWithoutMessage = false

    @Flag(help: "The reconnect storm: start the server with the command after --, listening on --port (Herald on a --data-dir), open --subscribers, SIGTERM it, start it again, bid --storm-bids times, and reconnect everyone with Last-Event-ID within --storm-seconds.")
    var storm = false
    @Flag(help: "With --storm: the server keeps running; the clients close their connections instead (needed with --nchan, whose messages do not outlive nginx).")
    var stormWithoutRestart = false
    @Argument(parsing: .postTerminator, help: "With --storm: the command that starts the server, after --.")
    var command: [String] = []
    @Option(help: "With --storm: where Herald's output goes.") var stormLog = "/dev/null"
    @Option(help: "With --storm: bids made on the restarted Herald before the clients come back.") var stormBids = 100
    @Option(help: "With --storm: the seconds in which every client reconnects.") var stormSeconds = 1.0
    @Flag(help: "With --storm: every client comes through one trusted proxy (127.0.0.2, X-Forwarded-For); otherwise each from its own address.")
    var proxy = false

    @Flag(help: "Read the streams through HeraldClient (auction(id).states) instead of the raw parser: what the client costs.")
    var heraldClient = false

    func validate() throws {
        guard subscribers >= 0, events > 0, events <= 1_000_000, ramp > 0, sources >= 1, sources <= 250, spread >= 1, spread <= 100_000 else {
            throw ValidationError("events, ramp and sources must be positive, subscribers not negative (sources at most 250)")
        }
        if storm, command.isEmpty { throw ValidationError("--storm needs the server's command after --") }
        if storm, nchan, !stormWithoutRestart { throw ValidationError("--storm with --nchan needs --storm-without-restart") }
        if nchan, pipelined || bidPort != nil || heraldClient || path != nil {
            throw ValidationError("--nchan measures the peer's fan-out and arrival only: not with --pipelined, --bid-port, --herald-client or --path")
        }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard UInt(subscribers) + 16 <= UInt(limit.rlim_cur) else {
            throw ValidationError("\(subscribers) subscribers need more open files than the limit of \(limit.rlim_cur)")
        }
    }

    func run() throws {
        if storm {
            let options = Storm.Options(command: command, log: stormLog, host: host, port: port,
                                        subscribers: subscribers, bids: stormBids, rampPerSecond: ramp, stormSeconds: stormSeconds,
                                        timeoutSeconds: timeout, proxy: proxy, restart: !stormWithoutRestart, nchan: nchan)
            try print(Self.json(Storm(options: options).run()))
            return
        }
        guard let pid else { throw ValidationError("--pid is needed, except with --storm") }
        let options = Fanout.Options(host: host, port: port, pid: pid, subscribers: subscribers, events: events,
                                     intervalMilliseconds: intervalMs, rampPerSecond: ramp, sources: sources,
                                     idleSeconds: idleSeconds, timeoutSeconds: timeout, auction: auction, holdSeconds: holdSeconds,
                                     pipelined: pipelined, bidPort: bidPort, path: path, spread: spread, nchan: nchan,
                                     nchanWithoutMessage: nchanWithoutMessage, busyPoll: busyPoll)
        let report = try heraldClient ? ClientFanout(options: options).run() : Fanout(options: options).run()
        try print(Self.json(report))
    }

    static func json(_ report: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}
