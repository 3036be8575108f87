import Foundation
import Synchronization

/// The time a connection may take to send a request's head: from its accept for the first request,
/// and for a later one on a kept-alive connection from the moment its request line arrives (the wait
/// before that is the idle timeout's). libmicrohttpd's own timeout is an idle one that every byte
/// restarts, so a client that sends a byte every few seconds (slowloris) would hold its connection
/// for ever.
///
/// libmicrohttpd tells the daemon's thread when a connection starts and ends and when a request line
/// and a head arrive; `sweep` runs on another thread and shuts down the socket of each connection
/// past its deadline, which libmicrohttpd then sees as the peer leaving and closes. The table's lock
/// makes that safe: libmicrohttpd reports a connection closed (daemon.c:3799) before it closes its
/// socket (daemon.c:3845), so every descriptor in the table is still the connection's own.
final class HeadDeadlines: Sendable {
    private struct Waiting {
        let socket: Int32
        var deadline: ContinuousClock.Instant?
    }

    let timeout: Duration
    /// The time the body may take once the head is in.
    let bodyTimeout: Duration
    private let table = Mutex<[UInt: Waiting]>([:])

    init(timeout: Duration, bodyTimeout: Duration) {
        self.timeout = timeout
        self.bodyTimeout = bodyTimeout
    }

    /// A connection was accepted: its first head is due within the timeout.
    func started(_ connection: OpaquePointer, socket: Int32, at now: ContinuousClock.Instant = .now) {
        let deadline = now + timeout
        table.withLock { $0[UInt(bitPattern: connection)] = Waiting(socket: socket, deadline: deadline) }
    }

    /// A request line arrived: on a kept-alive connection, its head is due within the timeout.
    func requestLine(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        let deadline = now + timeout
        table.withLock { table in
            let key = UInt(bitPattern: connection)
            guard var waiting = table[key] else { return }
            if waiting.deadline.map({ $0 > deadline }) ?? true { waiting.deadline = deadline }
            table[key] = waiting
        }
    }

    /// A request was answered: a kept-alive connection may wait `idle` for its next request line
    /// (nil: as long as it likes), however it trickles it.
    func requestCompleted(_ connection: OpaquePointer, idle: Duration?, at now: ContinuousClock.Instant = .now) {
        let deadline = idle.map { now + max($0, timeout) }
        table.withLock { table in table[UInt(bitPattern: connection)]?.deadline = deadline }
    }

    /// The head is in: what follows (the body, the answer) is not a head's business.
    func headReceived(_ connection: OpaquePointer) {
        table.withLock { table in table[UInt(bitPattern: connection)]?.deadline = nil }
    }

    /// The head declared a body: it is due within `bodyTimeout` (a body sent a byte at a time would
    /// otherwise hold the connection, as a trickled head would).
    func bodyDue(_ connection: OpaquePointer, at now: ContinuousClock.Instant = .now) {
        let deadline = now + bodyTimeout
        table.withLock { table in table[UInt(bitPattern: connection)]?.deadline = deadline }
    }

    func closed(_ connection: OpaquePointer) {
        _ = table.withLock { $0.removeValue(forKey: UInt(bitPattern: connection)) }
    }

    /// Shuts down every connection past its deadline.
    func sweep(at now: ContinuousClock.Instant = .now) {
        table.withLock { table in
            for (key, waiting) in table {
                guard let deadline = waiting.deadline, deadline <= now else { continue }
                shutdown(waiting.socket, Int32(SHUT_RDWR))
                table[key]?.deadline = nil
            }
        }
    }
}
