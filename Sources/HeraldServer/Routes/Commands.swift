import Foundation
import HTTPTypes
import HeraldAuth
import HeraldDomain
import HeraldHTTP
import HeraldJSON

// Request bodies read into the domain's typed commands. Every field is checked and every problem is
// reported at once (422 with `errors`), before the command reaches the writer.

extension NewAuction {
    init(json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        let item = reader.string("item", length: 1...200)
        let countdown = reader.integer("countdownSeconds", required: false, range: 1...3600)
        let price = reader.integer("startingPrice", required: false, range: 0...Money.maximum)
        let currency = reader.string("currency", required: false, length: 1...20)
        let named = currency.flatMap(Currency.init(rawValue:))
        if let currency, named == nil {
            reader.fail("currency", "must be one of " + Currency.allCases.map(\.rawValue).joined(separator: ", ") + ", not '\(currency)'")
        }
        try reader.finish()
        self.init(item: item ?? "", countdownSeconds: Int(countdown ?? 7), startingPrice: price ?? 0, currency: named)
    }
}

extension NewBid {
    /// `{bidder, amount}`. With a token, the bidder must be the token's subject (`sub`): naming anyone
    /// else, or bidding with a token that names nobody, is 403.
    init(json: JSONValue, as caller: Access.Caller = Access.Caller(token: nil)) throws {
        var reader = try FieldReader(json)
        let bidder = reader.string("bidder", length: 1...100)
        let amount = reader.integer("amount", range: 0...Money.maximum)
        try reader.finish()
        if let token = caller.token {
            guard let subject = token.subject, !subject.isEmpty else {
                throw Problem(status: .forbidden, detail: "the token has no sub: it names nobody to bid as")
            }
            if let bidder, bidder != subject {
                throw Problem(status: .forbidden, detail: "the token bids as '\(RequestGuard.printable(subject))', not as '\(RequestGuard.printable(bidder))'")
            }
        }
        self.init(bidder: bidder ?? "", amount: amount ?? 0)
    }
}

extension HeraldDomain.Unit {
    /// `PUT /units/{id}`: `{name, status}`.
    init(id: String, json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        if !Self.isValidId(id) { reader.fail("id", "must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -") }
        let name = reader.string("name", length: 1...100)
        let statusName = reader.string("status")
        let status = statusName.flatMap(Status.init(rawValue:))
        if statusName != nil, status == nil { reader.fail("status", "must be one of healthy, wounded, dead") }
        try reader.finish()
        guard let name, let status else { throw DomainError(.invalid, "name and status are required") }
        self.init(id: id, name: name, status: status)
    }
}

extension Currency {
    /// `PUT /currency`: `{default}`.
    init(json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        let name = reader.string("default")
        let allowed = Currency.allCases.map(\.rawValue).joined(separator: ", ")
        if let name, Currency(rawValue: name) == nil { reader.fail("default", "must be one of \(allowed)") }
        try reader.finish()
        guard let name, let currency = Currency(rawValue: name) else { throw DomainError(.invalid, "default must be one of \(allowed)") }
        self = currency
    }
}

extension NewTrip {
    init(json: JSONValue) throws(DomainError) {
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

/// `POST /trips/{id}/delay`: `{deltaSeconds}`, nonzero, at most a day either way.
struct TripDelay {
    let seconds: Int

    init(json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        let delta = reader.integer("deltaSeconds", range: -86_400...86_400)
        if delta == 0 { reader.fail("deltaSeconds", "must not be zero") }
        try reader.finish()
        seconds = Int(delta ?? 0)
    }
}

/// `PATCH /trips/{id}`: `{actualDeparture}`; the planned times cannot change.
struct TripPatch {
    let actualDeparture: Date

    init(json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        reader.forbid(["departure", "arrival"], "cannot change: only actualDeparture can")
        let actual = reader.date("actualDeparture")
        try reader.finish()
        guard let actual else { throw DomainError(.invalid, "actualDeparture is required") }
        actualDeparture = actual
    }
}
