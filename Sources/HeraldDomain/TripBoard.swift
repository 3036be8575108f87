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

    public static let recordKind = "trip"

    /// Restores stored trips; they replace every trip in memory.
    public func restore(_ records: [JSONValue]) throws(DomainError) {
        var trips: [Trip] = []
        for record in records {
            guard let id = record["id"]?.stringValue,
                  let departure = record["departure"]?.stringValue.flatMap(Timestamp.parse),
                  let arrival = record["arrival"]?.stringValue.flatMap(Timestamp.parse),
                  let actual = record["actualDeparture"]?.stringValue.flatMap(Timestamp.parse)
            else { throw DomainError(.invalid, "a stored trip is unreadable: \(record.serialized.prefix(200))") }
            trips.append(Trip(id: id, departure: departure, arrival: arrival, actualDeparture: actual))
        }
        state.withLock { state in
            // Replaces what memory holds: also used to reload after a batch the store refused.
            state = State()
            for trip in trips {
                state.trips[trip.id] = trip
                state.nextId = max(state.nextId, (Int(trip.id) ?? 0) + 1)
                sink.seed([(Self.topic(trip.id), ["trip": trip.json(locale: Self.eventLocale)])])
            }
        }
    }

    public func create(_ request: NewTrip) throws(DomainError) -> Trip {
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        let id = String(state.withLock { $0.nextId })
        let trip = Trip(id: id, departure: request.departure, arrival: request.arrival,
                        actualDeparture: request.actualDeparture ?? request.departure)
        try sink.publish(Change(topic: Self.topic(id), event: nil, values: [(Self.topic(id), ["trip": trip.json(locale: Self.eventLocale)])],
                                records: [trip.record]))
        state.withLock { state in
            state.nextId += 1
            state.trips[id] = trip
        }
        return trip
    }

    /// The trips in id order whose id is above `after`.
    public func trips(after: Int = 0) -> [Trip] {
        state.withLock { state in
            state.trips.values.filter { (Int($0.id) ?? 0) > after }.sorted { Int($0.id) ?? 0 < Int($1.id) ?? 0 }
        }
    }

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
        return try update(id, field: "deltaSeconds") { $0.actualDeparture.addingTimeInterval(seconds) }
    }

    /// Sets the actual departure (`{actualDeparture}`).
    public func patch(_ id: String, json: JSONValue) throws(DomainError) -> Trip {
        var reader = try FieldReader(json)
        reader.forbid(["departure", "arrival"], "cannot change: only actualDeparture can")
        let actual = reader.date("actualDeparture")
        try reader.finish()
        guard let actual else { throw DomainError(.invalid, "actualDeparture is required") }
        return try update(id, field: "actualDeparture") { _ in actual }
    }

    private func update(_ id: String, field: String, _ newDeparture: (Trip) -> Date) throws(DomainError) -> Trip {
        // Read, store unlocked, write back: changes come one at a time (see `ChangeSink`).
        guard let old = state.withLock({ $0.trips[id] }) else { throw .notFound("trip", id) }
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
            let json = trip.json(locale: Self.eventLocale)
            try sink.publish(Change(topic: Self.topic(id), event: "trip",
                                    payload: ["trip": json, "changed": .array(changed.map { .string($0) })],
                                    tags: changed, values: [(Self.topic(id), ["trip": json])], records: [trip.record]))
            state.withLock { $0.trips[id] = trip }
            return trip
        }
    }
}
