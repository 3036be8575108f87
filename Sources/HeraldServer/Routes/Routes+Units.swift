import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addUnits(_ units: UnitStore, events: EventRoutes) {
        add("GET", "/units") { request in
            let paging = try Paging(request)
            let page = paging.page(units.units(after: paging.after))
            return paging.response("units", page.entries.map(\.json), more: page.more, lastKey: page.entries.last?.id, request: request)
        }
        add("GET", "/units/events") { request in try events.stream(request, topics: [UnitStore.collectionTopic]) }
        add("GET", "/units/{id}") { request in .json(try units.get(request.parameter("id")).json) }
        write("PUT", "/units/{id}", topic: "units/{id}") { request, _ in
            let id = request.parameter("id")
            let unit = try HeraldDomain.Unit(id: id, json: try request.json())
            return { () throws(DomainError) in
                let created = try units.put(unit)
                return .json(unit.json, status: created ? 201 : 200, headers: created ? [("Location", "/units/\(id)")] : [])
            }
        }
        write("DELETE", "/units/{id}", topic: "units/{id}") { request, _ in
            let id = request.parameter("id")
            return { () throws(DomainError) in
                try units.delete(id)
                return .empty(status: 204)
            }
        }
        add("GET", "/units/{id}/events") { request in
            try events.stream(request, topics: [UnitStore.topic(request.parameter("id"))])
        }
    }
}
