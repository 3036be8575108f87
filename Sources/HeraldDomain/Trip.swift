public import Foundation

/// A train trip. Its duration, delay and `delayed` flag follow from its three times.
public struct Trip: Sendable, Equatable {
    public let id: TripID
    public let departure: Date
    public let arrival: Date
    public var actualDeparture: Date

    public init(id: TripID, departure: Date, arrival: Date, actualDeparture: Date) {
        self.id = id
        self.departure = departure
        self.arrival = arrival
        self.actualDeparture = actualDeparture
    }

    public var durationSeconds: Int { Int(arrival.timeIntervalSince(departure)) }
    public var delaySeconds: Int { Int(actualDeparture.timeIntervalSince(departure)) }
    public var delayed: Bool { delaySeconds > 0 }

    /// A field an observer can follow (`?fields=`).
    public enum Field: String, Sendable, CaseIterable {
        case actualDeparture, delay, delayed
    }

    /// The fields whose values differ between two versions of a trip.
    public static func changedFields(from old: Trip, to new: Trip) -> [Field] {
        var fields: [Field] = []
        if old.actualDeparture != new.actualDeparture { fields.append(.actualDeparture) }
        if old.delaySeconds != new.delaySeconds { fields.append(.delay) }
        if old.delayed != new.delayed { fields.append(.delayed) }
        return fields
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
}
