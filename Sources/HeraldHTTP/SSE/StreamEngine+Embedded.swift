import Foundation
import HeraldThreads
import Synchronization

extension StreamEngine {
    /// The engine's one loop run on the caller's thread, one pass at a time, in the manner of swift-nio's
    /// `EmbeddedEventLoop`: a test adds streams, wakes them, moves the engine's clock (a `StreamClock`
    /// of its own), and runs a pass (`run()`), then reads what the stream's peer (a socket pair) got.
    /// The pass is the one the loop's thread runs (`runPass`), without waiting: what a test sees is what
    /// the order of a pass gives, not what two threads' timing happened to give.
    ///
    /// The engine has one loop and is never started; the caller's thread owns the loop from `init` on
    /// (a thread of its own, as the loop's would be: every access from another traps). `stop()` ends
    /// it (and `deinit`, if the test did not).
    final class Embedded {
        let engine: StreamEngine
        private var pass: Pass
        private var stopped = false

        init(_ engine: StreamEngine, heartbeat: Duration? = nil, duties: Duties = Duties()) {
            precondition(engine.loops.count == 1, "an embedded engine has one loop")
            precondition(!engine.started.exchange(true, ordering: .relaxed), "an embedded engine is never started")
            let loop = engine.loops[0]
            loop.thread.bindToCurrentThread()
            loop.owned.duties = duties
            self.engine = engine
            pass = Pass(heartbeat: heartbeat, at: engine.elapsed)
        }

        /// Runs one pass: what came on the sockets, the inbox (streams added, woken), the fan-out, the
        /// writes, the heartbeats due and, when a second has passed on the engine's clock, the expiry
        /// of tokens and the once-a-second duties.
        func run() {
            precondition(!stopped, "the embedded engine has stopped")
            _ = engine.runPass(engine.loops[0], &pass, waiting: false)
        }

        /// Runs passes until one finds nothing to do (at most `limit`): what a burst of wake-ups leads to.
        func runUntilIdle(limit: Int = 100) {
            for _ in 0..<limit {
                run()
                let loop = engine.loops[0]
                if loop.owned.ready.isEmpty, loop.owned.woken.isEmpty, loop.inbox.withLock({ $0.isEmpty }) { return }
            }
        }

        /// The streams the loop holds.
        var streamCount: Int { engine.loops[0].owned.streams.count }

        /// Drops every stream, as the loop's thread does when the engine stops.
        func stop() {
            guard !stopped else { return }
            stopped = true
            engine.stopped.store(true, ordering: .releasing)
            engine.finish(engine.loops[0])
            pass.deallocate()
        }

        deinit { stop() }
    }
}
