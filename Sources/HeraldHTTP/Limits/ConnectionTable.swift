import CMicroHTTPD
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
/// - **Making room.** When descriptors run short, the ones longest idle (kept alive between requests,
///   or accepted and still silent) are closed first, so a new client, a health probe among them, finds
///   room; then, if that is not enough, those still sending a head or a body, from the address that
///   holds the most connections first (a body trickled a byte at a time is never idle).
///
/// libmicrohttpd tells the daemon's thread when a connection starts and ends and when a request line,
/// a head and an answer happen; `sweep` runs on another thread. Closing is a `shutdown` of the socket,
/// which libmicrohttpd then sees as the peer leaving. The table's lock makes that safe: libmicrohttpd
/// reports a connection closed (daemon.c:3799) before it closes its socket (daemon.c:3845), so every
/// descriptor in the table is still the connection's own.
final class ConnectionTable: Sendable {
    /// One for every connection (`Pages`): 48 bytes, its times kept as nanoseconds (`Int64.min`: none),
    /// where three optional moments made it 72.
    private struct Entry {
        /// -1: a free place.
        var socket: Int32
        /// Shut down already (past its deadline, or closed to make room): not again.
        var closing = false
        /// A request on it was answered: libmicrohttpd may have set its socket's options since.
        var answered = false
        var address: String
        private var deadlineAt = Entry.none, idleSinceAt = Entry.none, sendingSinceAt = Entry.none

        init(socket: Int32, address: String, deadline: Moment?, idleSince: Moment?) {
            self.socket = socket
            self.address = address
            self.deadline = deadline
            self.idleSince = idleSince
        }

        var deadline: Moment? {
            get { Self.moment(deadlineAt) }
            set { deadlineAt = newValue?.nanoseconds ?? Self.none }
        }
        /// Since when the connection has had no request in progress; nil while it has one.
        var idleSince: Moment? {
            get { Self.moment(idleSinceAt) }
            set { idleSinceAt = newValue?.nanoseconds ?? Self.none }
        }
        /// Since when its client has been sending the request in progress (its line, then its body).
        var sendingSince: Moment? {
            get { Self.moment(sendingSinceAt) }
            set { sendingSinceAt = newValue?.nanoseconds ?? Self.none }
        }

        private static let none = Int64.min
        private static func moment(_ nanoseconds: Int64) -> Moment? { nanoseconds == none ? nil : Moment(nanoseconds: nanoseconds) }

        static let free = Entry(socket: -1, address: "", deadline: nil, idleSince: nil)
    }

    /// Entries by socket: a request finds its own three times without hashing (a dictionary keyed by
    /// the connection's address hashed it each time, a tenth of a small GET). libmicrohttpd reports a
    /// connection closed before it closes the socket (daemon.c:3799), so a number is free again before
    /// the kernel can give it to the next connection.
    private struct State {
        var entries = Pages()
        var count = 0
        var perAddress: [String: Int] = [:]

        func holds(_ slot: Int) -> Bool { entries.holds(slot) }

        mutating func remove(at slot: Int) {
            guard holds(slot) else { return }
            let address = entries[slot].address
            entries.remove(slot)
            count -= 1
            let left = perAddress[address, default: 1] - 1
            perAddress[address] = left > 0 ? left : nil
        }
    }

    /// The entries by socket number, in pages of `size` numbers, each made when one of its numbers is a
    /// connection's and let go when none is. A stream's socket is not a connection's (libmicrohttpd
    /// reported its connection closed when it was handed over), and one array of every number up to the
    /// highest in use cost every open stream its 48 bytes, 80 with the array's room (heaptrack, 10,000
    /// streams); pages of streams only are empty arrays.
    private struct Pages {
        static let size = 64
        /// Empty: no number of the page is held.
        private var pages: [[Entry]] = []
        /// How many numbers each page holds.
        private var held: [Int] = []

        func holds(_ slot: Int) -> Bool {
            let page = slot / Self.size
            return slot >= 0 && page < pages.count && !pages[page].isEmpty && pages[page][slot % Self.size].socket >= 0
        }

        /// The entry of a number held (`holds`), changed in place.
        subscript(slot: Int) -> Entry {
            get { pages[slot / Self.size][slot % Self.size] }
            _modify { yield &pages[slot / Self.size][slot % Self.size] }
        }

        /// Holds `slot` (≥ 0, not held) with `entry`.
        mutating func add(_ slot: Int, _ entry: Entry) {
            let page = slot / Self.size
            if pages.count <= page {
                pages += Array(repeating: [], count: page + 1 - pages.count)
                held += Array(repeating: 0, count: page + 1 - held.count)
            }
            if pages[page].isEmpty { pages[page] = Array(repeating: .free, count: Self.size) }
            pages[page][slot % Self.size] = entry
            held[page] += 1
        }

        /// Lets `slot` (held) go, and its page with the last.
        mutating func remove(_ slot: Int) {
            let page = slot / Self.size
            held[page] -= 1
            if held[page] == 0 { pages[page] = [] } else { pages[page][slot % Self.size] = .free }
        }

        var pagesInUse: Int { held.count { $0 > 0 } }

        /// The numbers held, lowest first.
        var slots: [Int] {
            pages.indices.flatMap { page in
                pages[page].indices.lazy.filter { pages[page][$0].socket >= 0 }.map { page * Self.size + $0 }
            }
        }
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
    var count: Int { state.withLock { $0.count } }

    /// Connections `address` holds.
    func held(by address: String) -> Int { state.withLock { $0.perAddress[address, default: 0] } }

    /// A connection was accepted: its first head is due within the timeout.
    func started(_ connection: OpaquePointer, socket: Int32, address: String, at now: Moment = .now) {
        let entry = Entry(socket: socket, address: address, deadline: now + timeout, idleSince: now)
        guard socket >= 0 else { return }
        let slot = Int(socket)
        state.withLock { state in
            // Not reported closed (it always is): its count goes with it.
            state.remove(at: slot)
            state.entries.add(slot, entry)
            state.count += 1
            state.perAddress[address, default: 0] += 1
        }
    }

    /// A request line arrived: on a kept-alive connection, its head is due within the timeout.
    func requestLine(_ connection: OpaquePointer, at now: Moment = .now) {
        let deadline = now + timeout
        update(connection) { entry in
            if entry.deadline.map({ $0 > deadline }) ?? true { entry.deadline = deadline }
            entry.idleSince = nil
            entry.sendingSince = now
        }
    }

    /// A request was answered: a kept-alive connection may wait `idle` for its next request line
    /// (nil: as long as it likes), however it trickles it.
    func requestCompleted(_ connection: OpaquePointer, idle: Duration?, at now: Moment = .now) {
        let deadline = idle.map { now + max($0, timeout) }
        update(connection) { entry in
            entry.deadline = deadline
            entry.idleSince = now
            entry.sendingSince = nil
            entry.answered = true
        }
    }

    /// The head is in: what follows (the body, the answer) is not a head's business. Returns the
    /// connection's peer address as it started, and whether a request on it was answered before; nil
    /// for a connection the table does not hold.
    @discardableResult
    func headReceived(_ connection: OpaquePointer) -> (address: String, answered: Bool)? {
        let slot = Int(cmhd_connection_fd(connection))
        return state.withLock { state in
            guard state.holds(slot) else { return nil }
            state.entries[slot].deadline = nil
            return (state.entries[slot].address, state.entries[slot].answered)
        }
    }

    /// The head declared a body: it is due within `bodyTimeout` (a body sent a byte at a time would
    /// otherwise hold the connection, as a trickled head would).
    func bodyDue(_ connection: OpaquePointer, at now: Moment = .now) {
        let deadline = now + bodyTimeout
        update(connection) { $0.deadline = deadline }
    }

    func closed(_ connection: OpaquePointer) { closed(socket: cmhd_connection_fd(connection)) }

    /// The connection on `socket` was closed.
    func closed(socket: Int32) {
        guard socket >= 0 else { return }
        state.withLock { $0.remove(at: Int(socket)) }
    }

    /// Pages of numbers that hold a connection (`Pages`).
    var pagesInUse: Int { state.withLock { $0.entries.pagesInUse } }

    /// Shuts down every connection past its deadline.
    func sweep(at now: Moment = .now) {
        state.withLock { state in
            for slot in state.entries.slots where !state.entries[slot].closing {
                guard let deadline = state.entries[slot].deadline, deadline <= now else { continue }
                shutdown(state.entries[slot].socket, Int32(SHUT_RDWR))
                state.entries[slot].closing = true
            }
        }
    }

    /// Shuts down up to `count` connections to make room; returns how many. The idle ones go first,
    /// the longest idle first; then, when they are not enough, those still waiting for their client to
    /// send a head or a body (its deadline is set and it is not idle), from the address holding the
    /// most connections first, and within one the longest waiting first: a client that trickles bodies
    /// from many addresses cannot take every descriptor. One that was accepted or began its request
    /// less than `grace` ago is spared: it may be the client the room is for.
    @discardableResult
    func closeIdle(_ count: Int, grace: Duration = .seconds(1), at now: Moment = .now) -> Int {
        guard count > 0 else { return 0 }
        return state.withLock { state in
            let slots = state.entries.slots
            let idle = slots.compactMap { slot -> (key: Int, since: Moment)? in
                let entry = state.entries[slot]
                guard !entry.closing, let since = entry.idleSince, since + grace <= now else { return nil }
                return (slot, since)
            }
            var chosen = idle.count <= count ? idle.map(\.key) : idle.sorted { $0.since < $1.since }.prefix(count).map(\.key)
            if chosen.count < count {
                let sending = slots.compactMap { slot -> (key: Int, share: Int, since: Moment)? in
                    let entry = state.entries[slot]
                    guard !entry.closing, entry.idleSince == nil, let since = entry.sendingSince,
                          entry.deadline != nil, since + grace <= now else { return nil }
                    return (slot, state.perAddress[entry.address, default: 0], since)
                }
                chosen += sending.sorted { ($0.share, $1.since) > ($1.share, $0.since) }.prefix(count - chosen.count).map(\.key)
            }
            for key in chosen {
                guard state.holds(key) else { continue }
                shutdown(state.entries[key].socket, Int32(SHUT_RDWR))
                state.entries[key].closing = true
            }
            return chosen.count
        }
    }

    /// Changes the connection's entry in place (a copy out and back cost a lookup and a retain more).
    private func update(_ connection: OpaquePointer, _ change: (inout Entry) -> Void) {
        let slot = Int(cmhd_connection_fd(connection))
        state.withLock { state in
            guard state.holds(slot) else { return }
            change(&state.entries[slot])
        }
    }
}
