import Foundation
import HeraldJSON
import Synchronization

/// Every trip. Moving a trip's actual departure publishes which fields changed, so an observer can
/// follow only its delay (property-level observation).
public final class TripBoard: Sendable {
    public static func topic(_ id: String) -> String { "trips/\(id)" }
    /// Events and snapshots carry display strings in this locale; `GET` can ask for any other.
    public static let eventLocale = Locale(identifier: "en_US")

    private struct State {
        var trips: [String: Trip] = [:]
        var nextId = 1
    }

    private let state = Mutex(State())
    private let sink: any ChangeSink

    public init(sink: any ChangeSink) { self.sink = sink }

    public func create(_ request: NewTrip) -> Trip {
        state.withLock { state in
            let id = String(state.nextId)
            state.nextId += 1
            let trip = Trip(id: id, departure: request.departure, arrival: request.arrival,
                            actualDeparture: request.actualDeparture ?? request.departure)
            state.trips[id] = trip
            sink.seed([(Self.topic(id), ["trip": trip.json(locale: Self.eventLocale)])])
            return trip
        }
    }

    public func list() -> [Trip] { state.withLock { $0.trips.values.sorted { Int($0.id) ?? 0 < Int($1.id) ?? 0 } } }

    public func get(_ id: String) throws(DomainError) -> Trip {
        guard let trip = state.withLock({ $0.trips[id] }) else { throw .notFound("trip", id) }
        return trip
    }

    public func exists(_ id: String) -> Bool { state.withLock { $0.trips[id] != nil } }

    /// Moves the actual departure by `deltaSeconds` (`{deltaSeconds}`, nonzero, at most a day either way).
    public func delay(_ id: String, json: JSONValue) throws(DomainError) -> Trip {
        var reader = try FieldReader(json)
        let delta = reader.integer("deltaSeconds", range: -86_400...86_400)
        if delta == 0 { reader.fail("deltaSeconds", "must not be zero") }
        try reader.finish()
        let seconds = TimeInterval(delta ?? 0)
        return try update(id) { $0.actualDeparture.addingTimeInterval(seconds) }
    }

    /// Sets the actual departure (`{actualDeparture}`).
    public func patch(_ id: String, json: JSONValue) throws(DomainError) -> Trip {
        var reader = try FieldReader(json)
        let actual = reader.date("actualDeparture")
        try reader.finish()
        guard let actual else { throw DomainError(.invalid, "actualDeparture is required") }
        return try update(id) { _ in actual }
    }

    private func update(_ id: String, _ newDeparture: (Trip) -> Date) throws(DomainError) -> Trip {
        try state.withLock { state throws(DomainError) in
            guard let old = state.trips[id] else { throw .notFound("trip", id) }
            var trip = old
            trip.actualDeparture = newDeparture(old)
            let changed = Trip.changedFields(from: old, to: trip)
            guard !changed.isEmpty else { return trip }
            state.trips[id] = trip
            let json = trip.json(locale: Self.eventLocale)
            sink.publish(Change(topic: Self.topic(id), event: "trip",
                                payload: ["trip": json, "changed": .array(changed.map { .string($0) })],
                                tags: changed, values: [(Self.topic(id), ["trip": json])]))
            return trip
        }
    }
}
