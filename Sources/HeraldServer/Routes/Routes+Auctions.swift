import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addAuctions(_ auctions: AuctionHouse, events: EventRoutes) {
        add("POST", "/auctions") { request in
            let auction = try auctions.create(try NewAuction(json: try request.json()))
            let id = auction["id"]?.stringValue ?? ""
            return .json(auction, status: 201, headers: [("Location", "/auctions/\(id)")])
        }
        add("GET", "/auctions") { _ in .json(["auctions": .array(auctions.list())]) }
        add("GET", "/auctions/{id}") { request in .json(try auctions.get(request.parameter("id"))) }
        add("GET", "/auctions/{id}/bids") { request in
            .json(["bids": .array(try auctions.bids(request.parameter("id")))])
        }
        add("POST", "/auctions/{id}/bids") { request in
            let id = request.parameter("id")
            guard auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            let result = try auctions.bid(on: id, try NewBid(json: try request.json()))
            let bidId = result.bid["id"]?.stringValue ?? ""
            return .json(["bid": result.bid, "auction": result.auction], status: 201,
                         headers: [("Location", "/auctions/\(id)/bids/\(bidId)")])
        }
        add("GET", "/auctions/{id}/events") { request in
            try events.stream(request, topics: [AuctionHouse.topic(request.parameter("id"))])
        }
    }

    mutating func addCurrency(_ currency: CurrencySetting, events: EventRoutes) {
        add("GET", "/currency") { _ in .json(currency.get()) }
        add("PUT", "/currency") { request in .json(try currency.set(json: try request.json())) }
        add("GET", "/currency/events") { request in try events.stream(request, topics: [CurrencySetting.topic]) }
    }

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

    mutating func addNotifications(_ journal: Journal, events: EventRoutes) {
        add("POST", "/notifications/{name}") { request in
            let post = try NotificationPost(name: request.parameter("name"), json: try request.json())
            let id = try journal.post(post.change(postedAt: Timestamp.format(.now)))
            return .json(["id": .string(String(id ?? 0))], status: 202)
        }
        add("GET", "/notifications/{name}/events") { request in
            let name = request.parameter("name")
            guard NotificationPost.isValidName(name) else { throw Problem(status: 404, detail: "'\(name)' is not a notification name") }
            return try events.stream(request, topics: [NotificationPost.topic(name)])
        }
    }
}
