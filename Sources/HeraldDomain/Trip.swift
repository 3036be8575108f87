import Foundation
import HeraldJSON

/// A train trip. Its duration, delay and `delayed` flag follow from its three times.
public struct Trip: Sendable, Equatable {
    public let id: String
    public let departure: Date
    public let arrival: Date
    public var actualDeparture: Date

    public init(id: String, departure: Date, arrival: Date, actualDeparture: Date) {
        self.id = id
        self.departure = departure
        self.arrival = arrival
        self.actualDeparture = actualDeparture
    }

    public var durationSeconds: Int { Int(arrival.timeIntervalSince(departure)) }
    public var delaySeconds: Int { Int(actualDeparture.timeIntervalSince(departure)) }
    public var delayed: Bool { delaySeconds > 0 }

    /// The trip's stored form: its three times.
    public var record: Record {
        Record(kind: TripBoard.recordKind, id: id, document: [
            "id": .string(id), "departure": Timestamp.json(departure), "arrival": Timestamp.json(arrival),
            "actualDeparture": Timestamp.json(actualDeparture),
        ])
    }

    /// The fields whose values differ between two versions of a trip.
    public static func changedFields(from old: Trip, to new: Trip) -> [String] {
        var fields: [String] = []
        if old.actualDeparture != new.actualDeparture { fields.append("actualDeparture") }
        if old.delaySeconds != new.delaySeconds { fields.append("delay") }
        if old.delayed != new.delayed { fields.append("delayed") }
        return fields
    }

    public func json(locale: Locale) -> JSONValue {
        let display = TripDisplay(trip: self, locale: locale)
        return [
            "id": .string(id), "departure": Timestamp.json(departure), "arrival": Timestamp.json(arrival),
            "actualDeparture": Timestamp.json(actualDeparture), "durationSeconds": .integer(durationSeconds),
            "delaySeconds": .integer(delaySeconds), "delayed": .bool(delayed),
            "display": [
                "locale": .string(locale.identifier), "date": .string(display.date), "departure": .string(display.departure),
                "actualDeparture": .string(display.actualDeparture), "arrival": .string(display.arrival),
                "duration": .string(display.duration), "delay": .optional(display.delay),
            ],
        ]
    }
}

/// A request to create a trip, checked.
public struct NewTrip: Sendable, Equatable {
    public let departure: Date
    public let arrival: Date
    public let actualDeparture: Date?

    public init(departure: Date, arrival: Date, actualDeparture: Date? = nil) {
        self.departure = departure
        self.arrival = arrival
        self.actualDeparture = actualDeparture
    }

    public init(json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        let departure = reader.date("departure")
        let arrival = reader.date("arrival")
        let actual = reader.date("actualDeparture", required: false)
        if let departure, let arrival, arrival <= departure { reader.fail("arrival", "must be after departure") }
        try reader.finish()
        guard let departure, let arrival else { throw DomainError(.invalid, "departure and arrival are required") }
        self.init(departure: departure, arrival: arrival, actualDeparture: actual)
    }
}
