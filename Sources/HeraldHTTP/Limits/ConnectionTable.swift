import HeraldThreads
import Foundation
import Synchronization

/// Every connection libmicrohttpd holds: whose it is, what it is doing, and the time it has left.
///
/// - **Deadlines.** A request's head is due within `timeout`: from the accept for the first request,
///   and on a kept-alive connection from the moment its request line arrives (the wait before that is
///   the idle timeout's). A declared body is due within `bodyTimeout` of the head. libmicrohttpd's own
///   timeout is an idle one that every byte restarts, so a client that sends a byte every few seconds
///   (slowloris, in the head or the body) would hold its connection for ever.
/// - **Addresses.** How many connections each peer address holds, for the limit per address.
/// - **Idle connections.** When descriptors run short, the ones longest idle (kept alive between
///   requests, or accepted and still silent) are closed first, so a new client, a health probe among
///   them, finds room.
///
/// libmicrohttpd tells the daemon's thread when a connection starts and ends and when a request line,
/// a head and an answer happen; `sweep` runs on another thread. Closing is a `shutdown` of the socket,
/// which libmicrohttpd then sees as the peer leaving. The table's lock makes that safe: libmicrohttpd
/// reports a connection closed (daemon.c:3799) before it closes its socket (daemon.c:3845), so every
/// descriptor in the table is still the connection's own.
final class ConnectionTable: Sendable {
    private struct Entry {
        let socket: Int32
        let address: String
        var deadline: ContinuousClock.Instant?
        /// Since when the connection has had no request in progress; nil while it has one.
        var idleSince: ContinuousClock.Instant?
        /// Shut down already (past its deadline, or closed to make room): not again.
        var closing = false
        /// A request on it was answered: libmicrohttpd may have set its socket's options since.
        var answered = false
    }

    private struct State {
        var entries: [UInt: Entry] = [:]
        var perAddress: [String: Int] = [:]
    }

    let timeout: Duration
    /// The time the body may take once the head is in.
    let bodyTimeout: Duration
    private let state = Lock(State())

    init(timeout: Duration, bodyTimeout: Duration) {
        self.timeout = timeout
        self.bodyTimeout = bodyTimeout
    }

    /// Connections held.
    var count: Int { state.withLock { $0.entries.count } }

    /// Connections `address` holds.
    func held(by address: String) -> Int { state.withLock { $0.perAddress[address, default: 0] } }

    /// A connection was accepted: its first head is due within the timeout.
    func started(_ connection: OpaquePointer, socket: Int32, address: String, at now: ContinuousClock.Instant = .now) {
        let entry = Entry(socket: socket, address: address, deadline: now + timeout, idleSince: now)
        state.withLock { state in
            state.entries[UInt(bitPattern: connection)] = entry
            state.perAddress[address, default: 0] += 1
        }
    }

    /// A request line arrived: on a kept-alive connection, its head is due within the timeout.
    func requestLine(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        let deadline = now + timeout
        update(connection) { entry in
            if entry.deadline.map({ $0 > deadline }) ?? true { entry.deadline = deadline }
            entry.idleSince = nil
        }
    }

    /// A request was answered: a kept-alive connection may wait `idle` for its next request line
    /// (nil: as long as it likes), however it trickles it.
    func requestCompleted(_ connection: OpaquePointer, idle: Duration?, at now: ContinuousClock.Instant = .now) {
        let deadline = idle.map { now + max($0, timeout) }
        update(connection) { entry in
            entry.deadline = deadline
            entry.idleSince = now
            entry.answered = true
        }
    }

    /// The head is in: what follows (the body, the answer) is not a head's business. Returns the
    /// connection's peer address as it started, and whether a request on it was answered before; nil
    /// for a connection the table does not hold.
    @discardableResult
    func headReceived(_ connection: OpaquePointer) -> (address: String, answered: Bool)? {
        state.withLock { state in
            guard let index = state.entries.index(forKey: UInt(bitPattern: connection)) else { return nil }
            state.entries.values[index].deadline = nil
            return (state.entries.values[index].address, state.entries.values[index].answered)
        }
    }

    /// The head declared a body: it is due within `bodyTimeout` (a body sent a byte at a time would
    /// otherwise hold the connection, as a trickled head would).
    func bodyDue(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        let deadline = now + bodyTimeout
        update(connection) { $0.deadline = deadline }
    }

    func closed(_ connection: OpaquePointer) {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: UInt(bitPattern: connection)) else { return }
            let left = state.perAddress[entry.address, default: 1] - 1
            state.perAddress[entry.address] = left > 0 ? left : nil
        }
    }

    /// Shuts down every connection past its deadline.
    func sweep(at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            for (key, entry) in state.entries where !entry.closing {
                guard let deadline = entry.deadline, deadline <= now else { continue }
                shutdown(entry.socket, Int32(SHUT_RDWR))
                state.entries[key]?.closing = true
            }
        }
    }

    /// Shuts down up to `count` idle connections, the longest idle first, to make room; returns how
    /// many. One that was accepted less than `grace` ago and has not spoken yet is spared: it may be
    /// the client the room is for.
    @discardableResult
    func closeIdle(_ count: Int, grace: Duration = .seconds(1), at now: ContinuousClock.Instant = .now) -> Int {
        guard count > 0 else { return 0 }
        return state.withLock { state in
            let idle = state.entries.compactMap { key, entry -> (key: UInt, since: ContinuousClock.Instant)? in
                guard !entry.closing, let since = entry.idleSince, since + grace <= now else { return nil }
                return (key, since)
            }
            let chosen = idle.count <= count ? idle : Array(idle.sorted { $0.since < $1.since }.prefix(count))
            for (key, _) in chosen {
                guard let socket = state.entries[key]?.socket else { continue }
                shutdown(socket, Int32(SHUT_RDWR))
                state.entries[key]?.closing = true
            }
            return chosen.count
        }
    }

    /// Changes the connection's entry in place (a copy out and back cost a lookup and a retain more).
    private func update(_ connection: OpaquePointer, _ change: (inout Entry) -> Void) {
        state.withLock { state in
            guard let index = state.entries.index(forKey: UInt(bitPattern: connection)) else { return }
            change(&state.entries.values[index])
        }
    }
}
