import Glibc

/// SIGTERM and SIGINT (and SIGHUP, which reads the keys again), held from the moment this is made until `wait()` takes one. They are blocked
/// in the calling thread before any other thread exists, so every thread made later (libmicrohttpd's,
/// the stream watcher, Dispatch's) inherits the block and no signal can end or escape the process
/// between the port opening and the wait: `sigwait` takes it from the pending set.
final class Termination {
    private var signals = sigset_t()

    init() {
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        // A write to a pipe or socket whose reader is gone must fail with EPIPE, not end Herald:
        // its log on a pipe whose reader died (`herald | tee`, a collector restarted), or `sendfile`
        // (a resumed stream's replay), which has no MSG_NOSIGNAL, to a client that just left.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Blocks until SIGTERM, SIGINT or SIGHUP, and returns which.
    @discardableResult
    func wait() -> Int32 {
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        return received
    }

    /// Blocks until SIGTERM or SIGINT, or for `seconds`; returns the signal, or nil when the time ran
    /// out. A SIGHUP meanwhile (while draining) is taken and ignored.
    func wait(seconds: Int) -> Int32? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            var timeout = timespec(tv_sec: Int(left.components.seconds), tv_nsec: Int(left.components.attoseconds / 1_000_000_000))
            let received = sigtimedwait(&signals, nil, &timeout)
            if received == SIGHUP { continue }
            if received > 0 { return received }
            if errno != EINTR { return nil }
        }
    }
}
