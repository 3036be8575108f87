import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HTTPTypes

extension Routes {
    mutating func addUnits(_ units: UnitStore, events: EventRoutes) {
        let encodings = UnitEncodings()
        read("/units") { request in
            try EventRoutes.refuseUnknownParameters(request, of: UnitStore.collectionTopic, known: EventRoutes.listParameters)
            let paging = try Paging(request)
            // `?status=wounded,dead`: units with any of those statuses, read as `/units/events` reads it.
            let statuses = try EventRoutes.queryFilter(request, UnitStore.collectionTopic)?.fields["status"]
            let page = paging.page(units.records(after: paging.after).filter { statuses?.contains($0.status.rawValue) ?? true })
            return paging.response("units", page.entries.map(\.json), more: page.more, lastKey: page.entries.last?.id, request: request)
        }
        add(.get, "/units/events") { request in try events.streamCollection(request, UnitStore.collectionTopic) }
        read("/units/{id}", parameter: "id") { id throws(DomainError) in
            let (bytes, etag) = encodings.encoded(try units.get(id))
            return (bytes, etag, true)
        }
        // `If-Match` and `If-None-Match` are checked on the writer, against the unit as the change sees
        // it: of two changes racing with one version (on one Herald or on replicas), one is made.
        write(.put, "/units/{id}", topic: "units/{id}") { request, _ in
            let id = request.parameter("id")
            let unit = try HeraldDomain.Unit(id: id, json: try request.json())
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                try conditions.check(units.latest(id).map(EntityTag.of), "unit '\(id)'")
                let created = try units.put(unit, in: batch)
                // Written once, and kept for the next GET and the next change's condition.
                let (bytes, etag) = encodings.encoded(unit)
                return .json(bytes: bytes, etag: etag, status: created ? .created : .ok,
                             headers: created ? [.location: "/units/\(id)"] : [:])
            }
        }
        write(.delete, "/units/{id}", topic: "units/{id}") { request, _ in
            let id = request.parameter("id")
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                try conditions.check(units.latest(id).map(EntityTag.of), "unit '\(id)'")
                try units.delete(id, in: batch)
                return .empty(status: .noContent)
            }
        }
        add(.get, "/units/{id}/events") { request in
            try events.stream(request, topics: [UnitStore.topic(request.parameter("id"))])
        }
    }
}
