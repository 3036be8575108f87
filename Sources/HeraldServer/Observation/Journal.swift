import HeraldThreads
import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON
import HeraldStore
import Logging
import Synchronization

/// Where every domain change goes: stored first (records and event in one transaction), then
/// published on the hub with the same sequence number. A change that cannot be stored is refused,
/// so a 2xx always means stored, and every observer sees what the store holds.
///
/// Changes run on the `writer`, the only source of sequence numbers. On the writer, a change's event
/// waits until its batch is finished (`finishBatch`: the batch's one transaction committed, the log
/// synced once with `--sync full`, then every event published in order), so no observer sees a change
/// before it is durable.
final class Journal: ChangeSink {
    /// Published events, for the routes that read it; nothing outside this module publishes on it.
    let hub: Hub
    let writer: Writer
    /// Internal: tests make its next batch commit fail.
    let store: (any Store)?
    let logger: Logger
    /// Stamps stored events, so that pruning by age and the domain agree on the time.
    let clock: any DomainClock
    /// What the current batch will publish, in order, once it is durable.
    enum Publication {
        case event(id: UInt64, durable: Bool, topic: String, name: EventName, tags: [String], updates: [Hub.Update], data: [UInt8])
        case values([Hub.Update])
    }

    /// The writer's current batch: what it will publish, what the domain waits on to take its changes
    /// into memory, and the last sequence number before it once it opened a store transaction (nil: it
    /// stored nothing).
    struct Batch {
        var publications: [Publication] = []
        var endings: [Ending] = []
        var sequenceBefore: UInt64?
        /// The last event posted, as published (`{"topic":…,` then its payload's members) with its topic's
        /// length in bytes: a change whose answer is its event's payload answers with these bytes.
        var lastEvent: (data: [UInt8], members: Int)?
    }

    /// Told whether the batch was durable (a closure kept in a struct: see `Lock`).
    struct Ending: Sendable {
        let run: @Sendable (_ durable: Bool) -> Void
    }

    /// What makes memory follow a shared store (`Subjects.follower`), given to `start`: the subjects
    /// are made with the journal as their sink, so they cannot be given to its initializer.
    struct Follower: Sendable {
        /// Makes memory equal to the store after other Heralds committed (restores it as at start,
        /// or merges what changed); whether it could.
        let catchUp: @Sendable (ChangeBatch) -> Bool
        /// Merges into memory what other Heralds committed, from their news; false when memory could
        /// not take all of it.
        let merge: @Sendable (StoredChanges, ChangeBatch) -> Bool
    }

    /// Told of each event published, by name (metrics).
    typealias Published = @Sendable (_ name: String) -> Void

    /// Everything the journal keeps, which only the writer's thread touches (checked in debug builds).
    struct State {
        /// The last sequence number given out.
        var sequence: UInt64
        var batch = Batch()
        /// Answers kept for `Idempotency-Key` retries when there is no store: the newest 10,000.
        var kept: [String: KeptAnswer] = [:]
        var keptOrder: [String] = []
        /// What makes memory follow a shared store, from the writer's start (`start(following:)`).
        /// Before it (the batches that restore the store at start, which read it themselves), a batch
        /// that finds the store moved only publishes the events it missed.
        var follower: Follower?
        /// While a batch begins (`prepareBatch`): news may be taken in only then, between changes,
        /// never while a change runs.
        var preparing = false
    }

    let state: ThreadBound<State>
    static let keptInMemoryLimit = 10_000

    /// A batch is queued only to catch up (`wake`, from the store's listener); more wake-ups meanwhile
    /// queue nothing more, but are remembered (`wokenMeanwhile`).
    let wakeQueued = Atomic<Bool>(false)
    /// A wake-up came while one was queued: a catch-up batch may have read before what it was for was
    /// committed, so the batch's end wakes again.
    let wokenMeanwhile = Atomic<Bool>(false)

    /// The last batch that stored something could not be committed (readiness, on the server's
    /// thread, says so until one is).
    let commitFailing = Atomic<Bool>(false)

    /// Whether the last batch that stored something failed to commit.
    var isFailingToCommit: Bool { commitFailing.load(ordering: .relaxed) }

    /// Held (written) while memory takes a batch and the hub numbers its events, and (read) while a
    /// `GET` reads state and the last event id: so the id a read answers with is exactly the last
    /// event its state reflects, and a stream resumed after it misses and repeats nothing.
    let visibility = ReadWriteSection()

    /// Runs `read` (a read of state, on any thread) and gives the id of the last event what it read
    /// reflects.
    func reading<T>(_ read: () throws -> T) rethrows -> (value: T, eventID: UInt64) {
        let (value, eventID, _) = try readingGeneration(read)
        return (value, eventID)
    }

    /// `reading`, with the generation of the state it read (`ReadWriteSection.generation`): the same
    /// until the next batch becomes visible.
    func readingGeneration<T>(_ read: () throws -> T) rethrows -> (value: T, eventID: UInt64, generation: UInt64) {
        try visibility.read { (try read(), hub.lastEventId, visibility.generation) }
    }

    /// The generation of the state readers see now; odd while a batch is becoming visible.
    var generation: UInt64 { visibility.generation }

    /// The last event id given out: after a change, the id of the last event it published, or the
    /// last before it when it published none. On the writer.
    func lastEventID(in batch: ChangeBatch) -> UInt64 { state.withValue { $0.sequence } }

    /// Told of each event published (its name), on the writer's thread.
    let published: Published?

    /// Runs `change` on the journal's state, through the writer's queue when called from elsewhere
    /// (setting up).
    func onWriter(_ change: @escaping @Sendable (inout State) -> Void) {
        let state = state
        _ = try? performAndWait { _ in state.withValue(change) }
    }

    /// How the writer's batches begin and end: with this journal's transaction, its publishing and
    /// its store's upkeep.
    var batches: Writer.Steps {
        Writer.Steps(prepare: { [weak self] batch in self?.prepareBatch(batch) }, finish: { [weak self] _ in self?.finishBatch() },
                     tidy: { [weak self] in self?.store?.tidy() })
    }

    /// Runs `work` on the writer and waits until its batch is finished (`Writer.perform`).
    func performAndWait<T: Sendable>(_ work: @escaping @Sendable (ChangeBatch) throws(DomainError) -> T) throws(DomainError) -> T {
        try writer.perform(batches: batches, work)
    }

    /// - Parameters:
    ///   - writer: the writer's thread, what runs around each batch's answers, and what is told of each batch.
    ///   - published: told of each event published, by name.
    init(hub: Hub, store: (any Store)?, lastSequence: UInt64, clock: any DomainClock, logger: Logger,
         writer: Writer = Writer(), published: Published? = nil) {
        self.hub = hub
        self.writer = writer
        self.published = published
        self.clock = clock
        self.store = store
        self.logger = logger
        self.state = ThreadBound(State(sequence: lastSequence), owner: writer.thread)
        for kind in CollectionKind.allCases {
            hub.declareCollection(kind.topic, arrayName: kind.arrayName, itemName: kind.itemEvent)
        }
    }

    /// Starts the writer's thread; memory follows a shared store from its first batch on with
    /// `follower`. Until then, the thread that sets Herald up stands in for it.
    func start(following follower: Follower? = nil) {
        let state = state
        writer.start(batches: batches) { state.withValue { $0.follower = follower } }
    }

    func publish(_ event: DomainEvent, in batch: ChangeBatch) throws(DomainError) { _ = try post(Self.entry(for: event, at: clock.now), in: batch) }

    func seed(_ states: [DomainState]) {
        let now = clock.now
        var values: [(topic: String, value: JSONValue?)] = []
        var members: [Member] = []
        for state in states {
            switch state {
            case .auction(let auction):
                let json = JSONValue.encoded(auction.json(at: now).bytes)
                values.append((AuctionHouse.topic(auction.id), ["auction": json]))
                members.append(.auction(auction, json: json))
            case .trip(let trip):
                let json = JSONValue.encoded(trip.json(style: .events).bytes)
                values.append((TripBoard.topic(trip.id), ["trip": json]))
                members.append(.trip(trip, json: json))
            case .currency(let currency): values.append((CurrencySetting.topic, currency.json))
            case .record(let record):
                guard let (value, member) = Registry.keyedKind(type(of: record).collection)?.seeded(record) else { Self.unregistered(record) }
                values.append(value)
                members.append(member)
            case .recordRemoved(let collection, let id):
                values.append((collection + "/" + id, nil))
                members.append(Member(collection: collection, key: id, value: nil))
            }
        }
        hub.set(Self.updates(values, members))
    }

    /// The payload of the event the current change posted last, as JSON text (the event's data without
    /// its topic), taken: a bid answers with the bytes its event was published with, written once.
    func takePostedPayload(in batch: ChangeBatch) -> [UInt8]? {
        state.withValue { state in
            defer { state.batch.lastEvent = nil }
            guard let (data, members) = state.batch.lastEvent else { return nil }
            guard members < data.count else { return Array("{}".utf8) }
            return [UInt8(ascii: "{")] + data[members...]
        }
    }

    func perform(_ work: @escaping @Sendable (ChangeBatch) -> Void) {
        writer.queue(batches: batches, work)
    }

    /// The domain's memory takes a batch's changes once it is durable (`finishBatch`), so that no
    /// reader sees a change the store does not hold.
    func whenBatchEnds(in batch: ChangeBatch, _ end: @escaping @Sendable (_ durable: Bool) -> Void) {
        state.withValue { $0.batch.endings.append(Ending(run: end)) }
    }

    /// Before the writer runs a batch. With a shared store, the batch's transaction opens now, under
    /// the store's write lock, and what other Heralds committed since this one last looked is taken in
    /// first: memory is restored from the store, and their events are published here with their ids,
    /// before any of the batch's. While memory cannot be restored, the batch's changes are refused
    /// without running.
    func prepareBatch(_ batch: ChangeBatch) -> DomainError? {
        guard let store, store.isShared else { return nil }
        do throws(StoreError) {
            state.withValue { $0.preparing = true }
            defer { state.withValue { $0.preparing = false } }
            let start = try store.beginBatch(news: newsTaker(in: batch))
            let last = state.withValue { $0.sequence }
            guard let start, start.behind || start.committed != last else {
                state.withValue { $0.batch.sequenceBefore = last }
                return nil
            }
            let committed = max(start.committed, last)
            let missed = try store.events(after: last)
            // Before restoring: an auction that restoring closes takes the next id after theirs.
            let follower = state.withValue { state in
                state.sequence = committed
                state.batch.sequenceBefore = committed
                return state.follower
            }
            let caughtUp = visibility.write { () -> Bool in
                guard follower?.catchUp(batch) ?? true else { return false }
                for event in missed {
                    apply(.event(id: event.id, durable: true, topic: event.topic, name: EventName(event.name), tags: event.tags,
                                 updates: [], data: event.data))
                }
                return true
            }
            guard caughtUp else {
                store.rollbackBatch()
                state.withValue { state in
                    state.sequence = last  // so that the next batch tries again
                    state.batch = Batch()
                }
                return DomainError(.unavailable, "the store cannot be read, so no change can be made now; try again later")
            }
            return nil
        } catch {
            store.rollbackBatch()
            state.withValue { $0.batch = Batch() }
            logger.error("could not catch up with the store", metadata: ["store.error": "\(error)"])
            return Self.refusal(for: error, topic: "a batch of changes")
        }
    }

    /// Ends the writer's batch: commits its one transaction, syncs the store's log (with `--sync full`),
    /// lets the domain's memory take the batch's changes, then publishes their events in order.
    /// Returns why the batch is not durable, if it is not. A batch whose commit fails never happened:
    /// memory never took it, nothing of it is published, the sequence goes back, and every client in
    /// it is refused.
    func finishBatch() -> DomainError? {
        var taken = state.withValue { state in
            defer { state.batch = Batch() }
            return state.batch
        }
        // Its arrays serve the next batch, emptied: grown anew for every batch, a batch of a dozen
        // changes made allocations of a kilobyte and more, which glibc serves by sorting its free lists.
        defer { recycle(&taken) }
        if let before = taken.sequenceBefore, let store {
            do throws(StoreError) {
                try store.commitBatch()
                commitFailing.store(false, ordering: .relaxed)
            } catch {
                commitFailing.store(true, ordering: .relaxed)
                logger.error("a batch of changes could not be committed, so none of them was made",
                             metadata: ["store.error": "\(error)", "batch.publications": "\(taken.publications.count)"])
                state.withValue { $0.sequence = before }
                for ending in taken.endings { ending.run(false) }
                return Self.refusal(for: error, topic: "a batch of changes")
            }
        }
        var failure: DomainError?
        if taken.sequenceBefore != nil, let store, store.synchronous == .full {
            do throws(StoreError) {
                try store.syncLog()
            } catch {
                // The changes are made and stored, so observers are told; the writers hear that the
                // disk could not confirm them.
                logger.error("the store's log could not be synced", metadata: ["store.error": "\(error)"])
                failure = DomainError(.failed, "the change was made but the disk could not confirm it", cause: "sync failed: \(error)")
            }
        }
        // Stored (and synced, or the clients hear that it was not): memory takes it before anyone
        // hears of it, so a reader told of an event finds its change.
        visibility.write {
            for ending in taken.endings { ending.run(true) }
            for publication in taken.publications { apply(publication) }
        }
        return failure
    }

    /// Empties a finished batch's arrays and gives them to the next batch, which has not begun (the
    /// writer finishes one batch before it begins the next).
    func recycle(_ batch: inout Batch) {
        batch.publications.removeAll(keepingCapacity: true)
        batch.endings.removeAll(keepingCapacity: true)
        guard batch.publications.capacity <= Writer.keptCapacity, batch.endings.capacity <= Writer.keptCapacity else { return }
        state.withValue { state in
            guard state.batch.publications.isEmpty, state.batch.endings.isEmpty else { return }
            swap(&state.batch.publications, &batch.publications)
            swap(&state.batch.endings, &batch.endings)
        }
    }

    /// Publishes at the end of the writer's batch.
    func emit(_ publication: Publication) {
        state.withValue { $0.batch.publications.append(publication) }
    }

    /// Puts one publication on the hub.
    func apply(_ publication: Publication) {
        switch publication {
        case .event(let id, let durable, let topic, let name, let tags, let updates, let data):
            hub.publish(id: durable ? id : nil, durable: durable, topic: topic, name: name, tags: tags, updates: updates, data: data)
            published?(name.text)
        case .values(let updates):
            hub.set(updates)
        }
    }

    /// The time by the clock that stamps stored events.
    var now: Date { clock.now }

    /// Stores and publishes `change`; returns its event's id (nil for a change without event).
    @discardableResult
    func post(_ change: Entry, in batch: ChangeBatch) throws(DomainError) -> UInt64? {
        let (last, opened) = state.withValue { ($0.sequence, $0.batch.sequenceBefore != nil) }
        let updates = Self.updates(change.values, change.members)
        if !change.durable, let name = change.event {
            // News of the moment: never stored, and it takes no sequence number.
            emit(.event(id: last, durable: false, topic: change.topic, name: name, tags: change.tags, updates: updates,
                        data: Self.data(topic: change.topic, payload: change.payload)))
            return nil
        }
        let id = last + 1
        let event = change.event.map { _ in Self.event(topic: change.topic, payload: change.payload) }
        let data = event?.data
        if let store {
            if !opened {
                // The batch's first stored change opens its one transaction.
                do throws(StoreError) {
                    try store.beginBatch()
                } catch {
                    throw Self.refusal(for: error, topic: change.topic)
                }
                state.withValue { $0.batch.sequenceBefore = last }
            }
            let event = change.event.map {
                StoredEvent(id: id, topic: change.topic, name: $0.text, data: data ?? [], tags: change.tags, at: clock.now)
            }
            let records = change.records.map { RecordChange(kind: $0.kind, id: $0.id, document: $0.document) }
            do throws(StoreError) {
                try store.commit(event: event, records: records, auction: change.auction.map(Self.stored),
                                 bid: change.newBid.map(Self.stored))
            } catch {
                // Logged once, where the request's id is known (Routes).
                throw Self.refusal(for: error, topic: change.topic)
            }
        }
        guard let name = change.event, let data else {
            emit(.values(updates))
            return nil
        }
        state.withValue {
            $0.sequence = id
            $0.batch.lastEvent = event
        }
        emit(.event(id: id, durable: true, topic: change.topic, name: name, tags: change.tags, updates: updates, data: data))
        return id
    }

}
