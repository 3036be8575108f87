import HeraldThreads
import Dispatch
import Foundation
import HeraldDomain
import Synchronization

/// The one thread that changes state. Requests and timers queue their changes here; the writer takes
/// every change queued since its last batch, runs them in order in the batch's one store transaction
/// (a change the store refuses undoes only its own writes), then finishes the batch (one commit and,
/// with `--sync full`, one sync of the store's log for all of them, then their events published in
/// order), only then answers each, and last tidies (asks for SQLite's checkpoint). The thread that
/// serves HTTP never waits for the disk, and while the writer syncs, the changes that arrive meanwhile
/// make its next batch.
final class Writer: Sendable {
    /// One queued change: runs on the writer, and returns what to call once its batch is finished
    /// (with the batch's failure, if finishing failed).
    private struct Command: Sendable {
        let run: @Sendable (ChangeBatch) -> @Sendable (DomainError?) -> Void
        /// Answers it without running it.
        let refuse: @Sendable (DomainError) -> Void
    }

    private struct State {
        var queue: [Command] = []
        /// The last batch's array, emptied, to be the queue again (`takeQueue`), and its answers'.
        var spareQueue: [Command] = []
        var spareAnswers: [@Sendable (DomainError?) -> Void] = []
        var started = false
        var stopped = false
        /// Work that runs between batches, outside any (`between`).
        var between: [Job] = []
    }

    /// Kept in a struct (see `Lock`).
    private struct Job: Sendable {
        let run: @Sendable (ChangeBatch) -> Void
    }

    private let state = Lock(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The writer's thread, which owns the state bound to it (`ThreadBound`).
    let thread: OwnerThread
    /// Changes that ran, in the batches so far (for tests and the log).
    private let counts = Lock<(changes: Int, batches: Int)>((0, 0))
    /// Called around finishing and answering a batch (holding the stream engine's wake-up until the
    /// clients are answered).
    private let around: Around?

    /// What runs before a batch is finished, and after its clients are answered.
    struct Around: Sendable {
        let before: @Sendable () -> Void
        let after: @Sendable () -> Void
    }

    /// What is told of each finished batch: how many changes it held, and how long finishing it
    /// (commit, sync and publishing) took (metrics).
    typealias BatchRecorder = @Sendable (_ changes: Int, _ finishing: Duration) -> Void

    private let recorder: BatchRecorder?

    /// - Parameters:
    ///   - thread: the writer's thread, once `start` runs it; the thread that sets Herald up stands in
    ///     for it before.
    ///   - around: what runs before each batch is finished and after its clients are answered.
    ///   - recorder: told of each finished batch.
    init(thread: OwnerThread = OwnerThread(name: "herald-writer"), around: Around? = nil, recorder: BatchRecorder? = nil) {
        self.thread = thread
        self.around = around
        self.recorder = recorder
    }

    /// How each batch begins and ends: the journal's (`Journal.batches`), given to `start` for the
    /// thread's batches and to `perform` for a batch run by a stand-in before it. `prepare` runs before
    /// each batch: when it returns a refusal, the batch's changes get it without running. `finish` ends
    /// each batch: it makes the batch durable and publishes it, and returns why it could not, if it
    /// could not. `tidy` runs after the batch's clients are answered: the store's upkeep, which they
    /// need not wait for.
    struct Steps: Sendable {
        let prepare: @Sendable (ChangeBatch) -> DomainError?
        let finish: @Sendable (ChangeBatch) -> DomainError?
        let tidy: @Sendable () -> Void
    }

    /// Whether the writer refuses changes (it is stopping or stopped).
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Changes queued and not yet taken into a batch.
    var queueDepth: Int { state.withLock { $0.queue.count } }

    /// Whether the caller is the writer's thread.
    var isCurrentThread: Bool { thread.isCurrent }

    /// Batches finished and the changes they held.
    var statistics: (changes: Int, batches: Int) { counts.withLock { $0 } }

    /// Held while a thread stands in for the writer, before `start`, and by `start` itself: one stand-in
    /// at a time (the thread setting Herald up, or a restored countdown's timer that fires before the
    /// writer runs), and none once the thread runs.
    private let standingIn = CriticalSection()

    /// Starts the thread, whose batches begin and end with `steps` (kept by the thread, and let go
    /// when it ends). `first` runs on it before its first batch. Changes queued before run in that batch.
    func start(batches steps: Steps, first: @escaping @Sendable () -> Void = {}) {
        guard standingIn.run({
            state.withLock { state in
                defer { state.started = true }
                return !state.started
            }
        }) else { return }
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            self.thread.bindToCurrentThread()
            first()
            ready.signal()
            run(steps)
        }
        thread.name = "herald-writer"
        thread.start()
        ready.wait()
    }

    /// Queues `work`, which is handed the batch it runs in. `done` gets its result, on the writer's
    /// thread, once the batch holding it is durable and its events are published; after `stop`, at
    /// once, as a refusal.
    func submit<T: Sendable>(_ work: @escaping @Sendable (ChangeBatch) throws(DomainError) -> T,
                             done: @escaping @Sendable (Result<T, DomainError>) -> Void) {
        let command = command(work, done: done)
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(command)
            return true
        }
        if accepted {
            wake.signal()
        } else {
            done(.failure(DomainError(.unavailable, "Herald is shutting down, so the change was not made; try again")))
        }
    }

    private func command<T: Sendable>(_ work: @escaping @Sendable (ChangeBatch) throws(DomainError) -> T,
                                      done: @escaping @Sendable (Result<T, DomainError>) -> Void) -> Command {
        Command(run: { batch in
            let result: Result<T, DomainError>
            do throws(DomainError) { result = .success(try work(batch)) } catch { result = .failure(error) }
            return { failure in
                if let failure, case .success = result { done(.failure(failure)) } else { done(result) }
            }
        }, refuse: { done(.failure($0)) })
    }

    /// Queues `work` to run on the writer between two batches, in none: it changes nothing a batch
    /// stores (a replica taking in other replicas' news). Dropped once the writer stops.
    func between(_ work: @escaping @Sendable (ChangeBatch) -> Void) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.between.append(Job(run: work))
            return true
        }
        if accepted { wake.signal() }
    }

    /// Runs `work` on the writer after what was asked for before it, without waiting for it: at once
    /// on the writer, in place before the writer starts (the thread that sets Herald up stands in),
    /// else queued. A timer's firing comes this way, so the timers' thread never waits for a batch,
    /// its commit or its sync. Dropped once the writer has stopped.
    func queue(batches steps: @autoclosure () -> Steps, _ work: @escaping @Sendable (ChangeBatch) -> Void) {
        if isCurrentThread || !state.withLock({ $0.started }) {
            _ = try? perform(batches: steps()) { batch in work(batch) }
            return
        }
        submit({ batch throws(DomainError) in work(batch) }, done: { _ in })
    }

    /// Runs `work` on the writer and waits until its batch is finished. On the writer's own thread
    /// (a change that makes another) it runs at once, in the current batch. Before `start`, the thread
    /// that sets Herald up (restoring the store, the examples) stands in for the writer: `work` runs
    /// on it at once, as a batch of its own.
    /// `steps` begin and end the batch a stand-in runs (made only then); the thread's own are those
    /// `start` was given.
    func perform<T: Sendable>(batches steps: @autoclosure () -> Steps, _ work: @escaping @Sendable (ChangeBatch) throws(DomainError) -> T) throws(DomainError) -> T {
        // On the writer, within the batch running: a batch of its own would be another token for it.
        if isCurrentThread { return try work(ChangeBatch()) }
        let early = try standingIn.run { () throws(DomainError) -> Result<T, DomainError>? in
            guard !state.withLock({ $0.started }) else { return nil }
            return thread.standIn { () -> Result<T, DomainError>? in
                let outcome = Lock<Result<T, DomainError>?>(nil)
                let command = command(work) { result in outcome.withLock { $0 = result } }
                runBatch(steps()) { [command] }
                return outcome.withLock { $0 }
            } ?? .failure(DomainError(.failed, "the change was not answered"))
        }
        if let early { return try early.get() }
        let outcome = Lock<Result<T, DomainError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(work) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw DomainError(.failed, "the change was lost on its way to the writer") }
        return try result.get()
    }

    /// Finishes every change queued so far, then ends the thread; later changes are refused.
    func stop() {
        let running = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }
        guard running else { return }
        wake.signal()
        finished.wait()
    }

    private func run(_ steps: Steps) {
        while true {
            let (waiting, stopped, jobs) = state.withLock { state in
                defer { state.between = [] }
                return (!state.queue.isEmpty, state.stopped, state.between)
            }
            for job in jobs { job.run(ChangeBatch()) }
            if !jobs.isEmpty { continue }
            if !waiting {
                if stopped { break }
                wake.wait()
                continue
            }
            runBatch(steps) { takeQueue() }
        }
        finished.signal()
    }

    /// The most changes a batch's arrays keep room for from one batch to the next.
    static let keptCapacity = 1024

    /// The changes queued, leaving the queue empty with the storage of the last batch's: grown anew for
    /// every batch, it made allocations of a kilobyte and more in a batch of a dozen changes.
    private func takeQueue() -> [Command] {
        state.withLock { state in
            var taken = state.spareQueue
            state.spareQueue = []
            swap(&taken, &state.queue)
            return taken
        }
    }

    /// Begins a batch, then takes its changes (`take`): while the batch waits for a shared store's write
    /// lock (other replicas' batches), the changes that arrive join it. Runs them in order, finishes the
    /// batch, then answers them; or refuses them all without running when the batch could not begin.
    private func runBatch(_ steps: Steps, taking take: () -> [Command]) {
        let batch = ChangeBatch()
        let refusal = steps.prepare(batch)
        var commands = take()
        var answers = state.withLock { state in
            defer { state.spareAnswers = [] }
            return state.spareAnswers
        }
        defer {
            // Emptied, both arrays serve the next batch (up to `keptCapacity`: a burst's are let go).
            commands.removeAll(keepingCapacity: true)
            answers.removeAll(keepingCapacity: true)
            state.withLock { state in
                if commands.capacity <= Self.keptCapacity, state.spareQueue.capacity < commands.capacity { swap(&state.spareQueue, &commands) }
                if answers.capacity <= Self.keptCapacity, state.spareAnswers.capacity < answers.capacity { swap(&state.spareAnswers, &answers) }
            }
        }
        if let refusal {
            for command in commands { command.refuse(refusal) }
            return
        }
        for command in commands { answers.append(command.run(batch)) }
        around?.before()
        let finishing = ContinuousClock.now
        let failure = steps.finish(batch)
        recorder?(commands.count, finishing.duration(to: .now))
        counts.withLock {
            $0.changes += commands.count
            $0.batches += 1
        }
        for answer in answers { answer(failure) }
        around?.after()
        steps.tidy()
    }
}
