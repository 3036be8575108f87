import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addTrips(_ trips: TripBoard, events: EventRoutes) {
        write("POST", "/trips", topic: "trips/*") { request, _ in
            let new = try NewTrip(json: try request.json()), locale = request.locale
            return { () throws(DomainError) in
                let trip = try trips.create(new)
                return .json(trip.json(locale: locale), status: 201, headers: [("Location", "/trips/\(trip.id)")])
            }
        }
        add("GET", "/trips") { request in
            let paging = try Paging(request), locale = request.locale
            let page = paging.page(trips.trips(after: try paging.numericAfter()))
            return paging.response("trips", page.entries.map { $0.json(locale: locale) }, more: page.more,
                                   lastKey: page.entries.last?.id, request: request)
        }
        add("GET", "/trips/{id}") { request in .json(try trips.get(request.parameter("id")).json(locale: request.locale)) }
        let replicated = replicated
        write("PATCH", "/trips/{id}", topic: "trips/{id}") { request, _ in
            let id = request.parameter("id")
            if !replicated { _ = try trips.get(id) }
            let patch = try TripPatch(json: try request.json()), locale = request.locale
            return { () throws(DomainError) in .json(try trips.setActualDeparture(id, to: patch.actualDeparture).json(locale: locale)) }
        }
        write("POST", "/trips/{id}/delay", topic: "trips/{id}") { request, _ in
            let id = request.parameter("id")
            if !replicated { _ = try trips.get(id) }
            let delay = try TripDelay(json: try request.json()), locale = request.locale
            return { () throws(DomainError) in .json(try trips.delay(id, bySeconds: delay.seconds).json(locale: locale)) }
        }
        add("GET", "/trips/{id}/events") { request in
            try events.stream(request, topics: [TripBoard.topic(request.parameter("id"))])
        }
    }
}

extension Request {
    /// `?locale=`, else the first `Accept-Language` tag, else en_US; a language Herald has no strings
    /// for is en_US as a whole.
    var locale: Locale {
        let tag = query("locale") ?? header("Accept-Language").flatMap(Self.firstLanguage)
        guard let tag, !tag.isEmpty, tag != "*", tag.utf8.count <= 35,
              tag.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
        else { return Trip.eventLocale }
        return TripDisplay.supported(Locale(identifier: tag.replacingOccurrences(of: "-", with: "_")))
    }

    /// The first language range of an `Accept-Language` value (`de-CH;q=0.9, en` is `de-CH`), if any.
    static func firstLanguage(_ header: String) -> String? {
        for range in header.split(separator: ",") {
            guard let tag = range.split(separator: ";", omittingEmptySubsequences: false).first?.trimmingSpacesAndTabs,
                  !tag.isEmpty else { continue }
            return tag
        }
        return nil
    }
}
