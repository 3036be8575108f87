import Foundation
import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addTrips(_ trips: TripBoard, events: EventRoutes) {
        write(.post, "/trips", topic: "trips/*") { request, _ in
            // The new trip has no version yet: an `If-Match` cannot hold (RFC 9110 §13.1.1).
            try Preconditions(request).require(nil, "a new trip")
            let new = try NewTrip(json: try request.json()), style = try request.displayStyle()
            return { batch throws(DomainError) in
                let trip = try trips.create(new, in: batch)
                return .json(trip.json(style: style), status: .created, headers: [.location: "/trips/\(trip.id)"] + Self.language(style.locale))
            }
        }
        read("/trips") { request in
            try EventRoutes.refuseUnknownParameters(request, of: TripBoard.collectionTopic, known: EventRoutes.listParameters)
            let paging = try Paging(request), style = try request.displayStyle()
            let delayed: Bool? = switch request.query("delayed") {
            case nil: nil
            case "true": true
            case "false": false
            case let other?: throw Problem(status: .badRequest, detail: "delayed must be true or false, not '\(RequestGuard.printable(other))'")
            }
            let page = paging.page(trips.trips(after: try paging.numericAfter()).filter { delayed == nil || $0.delayed == delayed })
            var response = paging.response("trips", page.entries.map { $0.json(style: style) }, more: page.more,
                                            lastKey: page.entries.last?.id.description, request: request)
            response.headers.append(contentsOf: Self.language(style.locale))
            return response
        }
        add(.get, "/trips/events") { request in try events.streamCollection(request, TripBoard.collectionTopic) }
        read("/trips/{id}") { request in
            let trip = try trips.get(try Request.tripID(request.parameter("id")))
            let style = try request.displayStyle()
            return .json(bytes: trip.json(style: style).bytes, etag: EntityTag.of(trip, style: style), headers: Self.language(style.locale))
        }
        let replicated = replicated
        write(.patch, "/trips/{id}", topic: "trips/{id}") { request, _ in
            let id = try Request.tripID(request.parameter("id"))
            if !replicated { _ = try trips.get(id) }
            let patch = try TripPatch(json: try request.json()), style = try request.displayStyle()
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                try conditions.check(trips.latest(id).map { EntityTag.of($0, style: style) }, "trip '\(id)'")
                let trip = try trips.setActualDeparture(id, to: patch.actualDeparture, in: batch)
                return .json(bytes: trip.json(style: style).bytes, etag: EntityTag.of(trip, style: style), headers: Self.language(style.locale))
            }
        }
        write(.post, "/trips/{id}/delay", topic: "trips/{id}") { request, _ in
            let id = try Request.tripID(request.parameter("id"))
            if !replicated { _ = try trips.get(id) }
            let delay = try TripDelay(json: try request.json()), style = try request.displayStyle()
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                try conditions.check(trips.latest(id).map { EntityTag.of($0, style: style) }, "trip '\(id)'")
                let trip = try trips.delay(id, bySeconds: delay.seconds, in: batch)
                return .json(bytes: trip.json(style: style).bytes, etag: EntityTag.of(trip, style: style), headers: Self.language(style.locale))
            }
        }
        add(.get, "/trips/{id}/events") { request in
            try events.stream(request, topics: [TripBoard.collectionTopic + "/" + request.parameter("id")])
        }
    }
}

extension Routes {
    /// What a trip's answer says of its language: that it depends on `Accept-Language` (`Vary`), and
    /// the language it is in (`Content-Language`): the fallback, en-US, when Herald has no strings in
    /// the one asked for.
    static func language(_ locale: Locale) -> HTTPFields {
        [.vary: "Accept-Language", .contentLanguage: locale.identifier.replacingOccurrences(of: "_", with: "-")]
    }
}
