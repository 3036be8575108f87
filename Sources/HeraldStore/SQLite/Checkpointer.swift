import Dispatch
import Foundation
import HeraldThreads
import Synchronization

/// Copies SQLite's write-ahead log into the database on a thread of its own, through a connection of its
/// own, so that the writer does not wait for the two syncs of a checkpoint (the log's, then the
/// database's): run by the writer, inside a commit as SQLite does by default, they held every client
/// of the batch, and the next batch, for about 15 ms on this VM. Its checkpoints are passive: they copy
/// what no reader still needs and wait for no one. Its thread starts at the first request.
final class Checkpointer: Sendable {
    private let path: String
    private struct State {
        var started = false
        var requested = false
        var stopped = false
    }
    private let state = Lock(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Checkpoints run so far (tests).
    let passes = Atomic<Int>(0)
    /// Its thread, named for `top -H`.
    let thread = OwnerThread(name: "herald-checkpoint")

    init(path: String) { self.path = path }

    /// Asks for one checkpoint soon; requests made while one runs make one more after it.
    func request() {
        let start = state.withLock { state -> Bool? in
            guard !state.stopped else { return nil }
            state.requested = true
            defer { state.started = true }
            return !state.started
        }
        guard let start else { return }
        if start {
            Thread { [self] in run() }.start()
        }
        wake.signal()
    }

    /// Ends the thread, after the checkpoint it runs; returns once its connection is closed.
    func stop() {
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        guard started else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        thread.bindToCurrentThread()
        checkpointUntilStopped()
        finished.signal()
    }

    /// Its connection lives in here, so it is closed before `stop` returns.
    private func checkpointUntilStopped() {
        // Without its connection, the checkpoints fall to the writer (`SQLiteStore.tidy`).
        // A read opens the file: until then the connection does not know it is in WAL mode, and its
        // checkpoints do nothing.
        guard let connection = try? Connection(path: path), (try? connection.text("PRAGMA schema_version")) != nil else {
            while !state.withLock({ $0.stopped }) { wake.wait() }
            return
        }
        while true {
            wake.wait()
            let (requested, stopped) = state.withLock { state in
                defer { state.requested = false }
                return (state.requested, state.stopped)
            }
            if stopped { return }
            guard requested else { continue }
            connection.checkpoint()
            passes.add(1, ordering: .relaxed)
        }
    }
}
