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
        add("GET", "/auctions/{id}") { request in
            Response(status: 200, headers: [("Content-Type", "application/json")], body: .shared(try auctions.encoded(request.parameter("id"))))
        }
        add("GET", "/auctions/{id}/bids") { request in
            .json(["bids": .array(try auctions.bids(request.parameter("id")))])
        }
        add("GET", "/auctions/{id}/bids/{bid}") { request in
            let id = request.parameter("id"), bidId = request.parameter("bid")
            guard let bid = try auctions.bids(id).first(where: { $0["id"]?.stringValue == bidId }) else {
                throw DomainError.notFound("bid", bidId)
            }
            return .json(bid)
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
}
