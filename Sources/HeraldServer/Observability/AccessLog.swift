import Foundation
public import HeraldHTTP
import HeraldJSON
import HeraldThreads
import Logging
import Synchronization

/// The access log: a line per answered request, and the lines of streams opening and closing, formatted by hand into bytes (no metadata dictionary,
/// no string interpolation, the timestamp made once a second) and written in batches by a thread of
/// its own, off the request threads. A line is written within `delay` (200 ms) of its request; `flush`
/// writes what is pending at once, and `Herald.stop()` calls it, so nothing is lost at SIGTERM.
///
/// The lines are the ones swift-log's handlers wrote before, byte for byte, in both formats:
/// - text: `2026-11-26T01:06:37+0000 info herald: http.client=… … [HeraldServer] request`, with
///   controls escaped as `EscapingLogHandler` does;
/// - JSON: `{"time":"…Z","level":"info","message":"request","logger":"herald","http.client":"…",…}`.
///
/// Lines go to standard error with the other log lines, which are written as they happen: an access
/// line may come up to `delay` after a line logged later.
public final class AccessLog: Sendable {
    public enum Format: Sendable { case text, json }

    private struct Pending {
        var bytes: [UInt8] = []
        /// The second the cached timestamp is of, and its text (to the second; JSON adds milliseconds).
        var second = -1
        var stamp: [UInt8] = []
    }

    private let format: Format
    private let output: JSONLogHandler.Output
    private let pending = Lock(Pending())
    /// Signalled by the line that finds nothing pending: the writer waits `delay`, then writes.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the line that takes the pending bytes past `highWater`: the writer stops waiting.
    private let full = DispatchSemaphore(value: 0)
    private let delay: Duration
    private let highWater = 256 * 1024

    /// Started (its thread runs), and asked to stop.
    private let started = Atomic<Bool>(false), stopping = Atomic<Bool>(false)
    /// Signalled by the thread as it ends.
    private let ended = DispatchSemaphore(value: 0)

    public init(format: Format, output: JSONLogHandler.Output = .standardError, delay: Duration = .milliseconds(200)) {
        self.format = format
        self.output = output
        self.delay = delay
    }

    /// Starts the thread that writes the lines (`herald-access-log`): one of Herald's parts
    /// (`Herald.parts`). Lines recorded before wait for it, or for `flush`.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            // Named as the system sees it (`Thread.name` alone leaves it `herald`, the process's name).
            OwnerThread(name: "herald-access-log").bindToCurrentThread()
            while true {
                wake.wait()
                if stopping.load(ordering: .acquiring) { break }
                _ = full.wait(timeout: .now() + delay.inSeconds)
                flush()
            }
            ended.signal()
        }
        thread.name = "herald-access-log"
        thread.start()
    }

    /// Ends the thread, once, and writes what is pending: nothing recorded before is lost.
    public func stop() {
        if started.load(ordering: .acquiring), !stopping.exchange(true, ordering: .acquiringAndReleasing) {
            wake.signal()
            full.signal()
            ended.wait()
        }
        flush()
    }

    /// Writes what is pending now, on the caller's thread.
    public func flush() {
        let bytes = pending.withLock { pending -> [UInt8] in
            defer { pending.bytes = [] }
            return pending.bytes
        }
        if !bytes.isEmpty { output.write(bytes) }
    }

    /// Adds `exchange`'s line: `request`, or `stream opened` for a stream.
    public func record(_ exchange: Exchange) {
        add { stamp, milliseconds, format, bytes in Self.append(exchange, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes) }
    }

    /// Adds a `stream closed` line.
    public func record(_ summary: StreamSummary) {
        add(message: "stream closed", fields: Self.fields(summary))
    }

    private func add(message: String, fields: [(key: String, value: String)]) {
        add { stamp, milliseconds, format, bytes in
            Self.append(message: message, fields: fields, stamp: stamp, milliseconds: milliseconds, format: format, to: &bytes)
        }
    }

    private func add(_ write: ([UInt8], Int, Format, inout [UInt8]) -> Void) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let (wasEmpty, filled) = pending.withLock { pending -> (Bool, Bool) in
            let before = pending.bytes.count
            if pending.second != now.tv_sec {
                pending.second = now.tv_sec
                pending.stamp = Self.stamp(second: now.tv_sec, format: format)
            }
            write(pending.stamp, Int(now.tv_nsec / 1_000_000), format, &pending.bytes)
            return (before == 0, before < highWater && pending.bytes.count >= highWater)
        }
        if wasEmpty { wake.signal() }
        if filled { full.signal() }
    }
}
