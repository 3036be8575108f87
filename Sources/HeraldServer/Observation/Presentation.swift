import Foundation
import HeraldDomain
import HeraldJSON

// How domain values look to clients: their JSON, with display strings and faces. The domain knows
// none of this; the journal and the routes build it here.

extension Timestamp {
    /// An RFC 3339 string, or null.
    static func json(_ date: Date?) -> JSONValue {
        date.map { .string(format($0)) } ?? .null
    }
}

extension Bid {
    var json: JSONValue {
        ["id": .string(number.description), "bidder": .string(bidder), "amount": .int(amount), "at": Timestamp.json(at)]
    }
}

extension Auction {
    /// The auction as seen at `now` (its seconds left).
    func json(at now: Date) -> JSONValue {
        [
            "id": .string(id.description), "item": .string(item), "status": .string(status.rawValue),
            "price": .int(price), "startingPrice": .int(startingPrice), "currency": .string(currency.rawValue), "leader": .optional(leader),
            "bidCount": .integer(bids.count), "countdownSeconds": .integer(countdown.seconds),
            "remainingSeconds": .optional(countdown.remaining(at: now)), "deadline": Timestamp.json(countdown.deadline),
            "winner": .optional(winner),
            "createdAt": Timestamp.json(createdAt), "closedAt": Timestamp.json(closedAt),
        ]
    }
}

extension Currency {
    var json: JSONValue {
        ["default": .string(rawValue), "available": .array(Currency.allCases.map { .string($0.rawValue) }),
         "minorDigits": .object(Currency.allCases.map { ($0.rawValue, .integer($0.minorDigits)) })]
    }
}

extension Trip {
    func json(style: DisplayStyle) -> JSONValue {
        let display = TripDisplay(trip: self, style: style)
        return [
            "id": .string(id.description), "departure": Timestamp.json(departure), "arrival": Timestamp.json(arrival),
            "actualDeparture": Timestamp.json(actualDeparture), "durationSeconds": .integer(durationSeconds),
            "delaySeconds": .integer(delaySeconds), "delayed": .bool(delayed),
            "display": [
                "locale": .string(style.locale.identifier), "timeZone": .string(style.zoneName), "date": .string(display.date), "departure": .string(display.departure),
                "actualDeparture": .string(display.actualDeparture), "arrival": .string(display.arrival),
                "duration": .string(display.duration), "delay": .optional(display.delay),
            ],
        ]
    }

    /// What the store keeps of a trip: its three times.
    var document: JSONValue {
        [
            "id": .string(id.description), "departure": Timestamp.json(departure), "arrival": Timestamp.json(arrival),
            "actualDeparture": Timestamp.json(actualDeparture),
        ]
    }

    /// A trip from its stored document (or a trip event's JSON); nil when it does not read.
    init?(document: JSONValue) {
        guard let id = document["id"]?.stringValue.flatMap(TripID.init),
              let departure = document["departure"]?.stringValue.flatMap(Timestamp.parse),
              let arrival = document["arrival"]?.stringValue.flatMap(Timestamp.parse),
              let actual = document["actualDeparture"]?.stringValue.flatMap(Timestamp.parse) else { return nil }
        self.init(id: id, departure: departure, arrival: arrival, actualDeparture: actual)
    }
}
