import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addUnits(_ units: UnitStore, events: EventRoutes) {
        add("GET", "/units") { _ in .json(["units": .array(units.list())]) }
        add("GET", "/units/events") { request in try events.stream(request, topics: [UnitStore.collectionTopic]) }
        add("GET", "/units/{id}") { request in .json(try units.get(request.parameter("id"))) }
        add("PUT", "/units/{id}") { request in
            let id = request.parameter("id")
            let result = try units.put(id: id, json: try request.json())
            return .json(result.unit, status: result.created ? 201 : 200,
                         headers: result.created ? [("Location", "/units/\(id)")] : [])
        }
        add("DELETE", "/units/{id}") { request in
            try units.delete(request.parameter("id"))
            return .empty(status: 204)
        }
        add("GET", "/units/{id}/events") { request in
            try events.stream(request, topics: [UnitStore.topic(request.parameter("id"))])
        }
    }
}
