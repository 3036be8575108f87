public import Foundation
import HeraldThreads
import Synchronization

/// Every trip. Moving a trip's actual departure publishes which fields changed, so an observer can
/// follow only its delay (property-level observation).
public final class TripBoard: Sendable {
    public static func topic(_ id: TripID) -> String { "trips/\(id)" }
    /// Every trip: the collection.
    public static let collectionTopic = "trips"

    private struct State {
        /// What the store holds: what readers see.
        var trips: [TripID: Trip] = [:]
        var nextId = 1
        /// The writer's batch, until it is durable: its trips, and the next id after the ones it added.
        var staged = Staged<TripID, Trip>()

        /// The trip as the change being made sees it.
        func current(_ id: TripID) -> Trip? { staged.value(of: id, over: trips) }
    }

    private let state = Lock(State())
    private let sink: any ChangeSink

    public init(sink: any ChangeSink) { self.sink = sink }

    /// Restores stored trips; they replace every trip in memory.
    public func restore(_ trips: [Trip]) {
        state.withLock { state in
            state = State()
            for trip in trips {
                state.trips[trip.id] = trip
                state.nextId = max(state.nextId, trip.id.number + 1)
            }
            sink.seed(trips.map { .trip($0) })
        }
    }

    /// Takes in trips another Herald added or changed (a replica catching up); the others stay.
    public func merge(_ trips: [Trip]) {
        state.withLock { state in
            for trip in trips {
                state.trips[trip.id] = trip
                state.nextId = max(state.nextId, trip.id.number + 1)
            }
            sink.seed(trips.map { .trip($0) })
        }
    }

    public func create(_ request: NewTrip, in batch: ChangeBatch) throws(DomainError) -> Trip {
        // Read, store unlocked, stage: changes come one at a time (see `ChangeSink`).
        let number = state.withLock { $0.staged.next ?? $0.nextId }
        let trip = Trip(id: TripID(number), departure: request.departure, arrival: request.arrival,
                        actualDeparture: request.actualDeparture ?? request.departure)
        try sink.publish(.tripAdded(trip), in: batch)
        stage(trip, next: number + 1, in: batch)
        return trip
    }

    /// The trips in id order whose id is above `after`.
    public func trips(after: Int = 0) -> [Trip] {
        state.withLock { state in
            state.trips.values.filter { $0.id.number > after }.sorted { $0.id < $1.id }
        }
    }

    public func get(_ id: TripID) throws(DomainError) -> Trip {
        guard let trip = state.withLock({ $0.trips[id] }) else { throw .notFound("trip", id.description) }
        return trip
    }

    public func exists(_ id: TripID) -> Bool { state.withLock { $0.trips[id] != nil } }

    /// The trip as the change being made sees it (see `UnitStore.latest`); on the writer.
    public func latest(_ id: TripID) -> Trip? { state.withLock { $0.current(id) } }

    /// Moves the actual departure by `seconds` (the `deltaSeconds` of a request).
    public func delay(_ id: TripID, bySeconds seconds: Int, in batch: ChangeBatch) throws(DomainError) -> Trip {
        try update(id, field: "deltaSeconds", in: batch) { $0.actualDeparture.addingTimeInterval(TimeInterval(seconds)) }
    }

    /// Sets the actual departure.
    public func setActualDeparture(_ id: TripID, to date: Date, in batch: ChangeBatch) throws(DomainError) -> Trip {
        try update(id, field: "actualDeparture", in: batch) { _ in date }
    }

    private func update(_ id: TripID, field: String, in batch: ChangeBatch, _ newDeparture: (Trip) -> Date) throws(DomainError) -> Trip {
        // Read, store unlocked, stage: changes come one at a time (see `ChangeSink`).
        guard let old = state.withLock({ $0.current(id) }) else { throw .notFound("trip", id.description) }
        do {
            var trip = old
            trip.actualDeparture = newDeparture(old)
            // What is stored must be readable again: RFC 3339 ends at year 9999.
            guard Timestamp.range.contains(trip.actualDeparture) else {
                throw DomainError(.invalid, "\(field) would move actualDeparture outside years 0001 to 9999",
                                  fields: [FieldError(field: field, message: "moves actualDeparture outside years 0001 to 9999")])
            }
            let changed = Trip.changedFields(from: old, to: trip)
            guard !changed.isEmpty else { return trip }
            try sink.publish(.tripMoved(trip, changed: changed), in: batch)
            stage(trip, in: batch)
            return trip
        }
    }

    /// Stages a trip (and the next id, when it is new); the batch's first asks to hear when the batch ends.
    private func stage(_ trip: Trip, next: Int? = nil, in batch: ChangeBatch) {
        if state.withLock({ $0.staged.stage(trip, for: trip.id, next: next) }) { sink.whenBatchEnds(in: batch) { [weak self] durable in self?.batchEnded(durable: durable) } }
    }

    /// Memory takes the batch's trips once they are durable; a lost batch leaves it as it was.
    private func batchEnded(durable: Bool) {
        state.withLock { state in
            let staged = state.staged.take()
            guard durable else { return }
            for (id, trip) in staged.values { state.trips[id] = trip }
            state.nextId = max(state.nextId, staged.next ?? 0)
        }
    }
}
