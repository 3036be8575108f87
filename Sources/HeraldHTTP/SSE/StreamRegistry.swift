import CLinux
import Dispatch
import Foundation
import Synchronization

/// Every open SSE stream. One watcher thread blocks in epoll on their sockets so that a client that
/// leaves while its stream is suspended is noticed at once (libmicrohttpd does not notice it), and
/// the same thread sends the heartbeats. Idle streams cost no CPU.
///
/// A client's FIN alone is not its leaving: it may have half-closed its sending side (legal in
/// HTTP/1.1). The stream is probed with a heartbeat; a client that closed the whole socket answers it
/// with a reset (EPOLLHUP/EPOLLERR), and only then is the stream dropped.
final class StreamRegistry: Sendable {
    private struct State {
        var streams: [UInt64: StreamConnection] = [:]
        var nextToken: UInt64 = 1
        /// Streams closed since malloc last gave memory back to the system.
        var closedSinceTrim = 0
    }

    /// After this many streams close and none is left, free memory goes back to the system.
    static let trimAfter = 1000

    private let state = Mutex(State())
    private let epoll: Int32
    private let wakeup: Int32
    private let stopped = Atomic<Bool>(false)
    private let watcherDone = DispatchSemaphore(value: 0)

    init() {
        epoll = cepoll_create()
        wakeup = cepoll_eventfd()
        _ = cepoll_add(epoll, wakeup, CEPOLL_IN, 0)
    }

    deinit {
        close(epoll)
        close(wakeup)
    }

    var count: Int { state.withLock { $0.streams.count } }

    func makeToken() -> UInt64 {
        state.withLock { state in
            defer { state.nextToken += 1 }
            return state.nextToken
        }
    }

    func add(_ stream: StreamConnection) {
        state.withLock { $0.streams[stream.token] = stream }
        // The peer closing (or an error), reported once.
        if stream.socket >= 0 { _ = cepoll_add(epoll, stream.socket, CEPOLL_RDHUP | CEPOLL_ONESHOT, stream.token) }
    }

    /// Called from the response's free callback, before libmicrohttpd closes the socket.
    func remove(_ stream: StreamConnection) {
        if stream.socket >= 0 { _ = cepoll_remove(epoll, stream.socket) }
        let trim = state.withLock { state -> Bool in
            state.streams.removeValue(forKey: stream.token)
            state.closedSinceTrim += 1
            guard state.streams.isEmpty, state.closedSinceTrim >= Self.trimAfter else { return false }
            state.closedSinceTrim = 0
            return true
        }
        // Many subscribers gone at once: glibc keeps their freed memory unless asked to return it.
        if trim { _ = clinux_malloc_trim() }
    }

    var all: [StreamConnection] { state.withLock { Array($0.streams.values) } }

    /// Starts the watcher thread, which also sends the heartbeats.
    func start(heartbeat: Duration?) {
        let interval = heartbeat.flatMap { $0 > .zero ? $0 : nil }
        let thread = Thread { [self] in watch(heartbeat: interval) }
        thread.name = "herald-stream-watcher"
        thread.start()
    }

    /// Stops the watcher and the timer.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiring) else { return }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
        watcherDone.wait()
    }

    private func watch(heartbeat: Duration?) {
        var tokens = [UInt64](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        let clock = ContinuousClock()
        var nextHeartbeat = heartbeat.map { clock.now + $0 }
        while !stopped.load(ordering: .acquiring) {
            var timeout: Int32 = -1
            if let due = nextHeartbeat {
                let left = clock.now.duration(to: due)
                if left <= .zero {
                    for stream in all { stream.heartbeat() }
                    nextHeartbeat = heartbeat.map { due + $0 }
                    continue
                }
                timeout = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            }
            let count = tokens.withUnsafeMutableBufferPointer { tokens in
                events.withUnsafeMutableBufferPointer { cepoll_wait(epoll, tokens.baseAddress, $0.baseAddress, 256, timeout) }
            }
            guard count > 0 else {
                if count < 0, errno != EINTR { break }
                continue
            }
            let ready = state.withLock { state in
                (0..<Int(count)).compactMap { index in tokens[index] == 0 ? nil : state.streams[tokens[index]].map { ($0, events[index]) } }
            }
            for (stream, bits) in ready {
                if bits & (CEPOLL_HUP | CEPOLL_ERR) != 0 {
                    stream.close(.abort)
                } else {
                    // Only a reset or an error from now on (epoll always reports those).
                    _ = cepoll_modify(epoll, stream.socket, CEPOLL_ONESHOT, stream.token)
                    stream.peerFinishedSending()
                }
            }
        }
        watcherDone.signal()
    }
}
