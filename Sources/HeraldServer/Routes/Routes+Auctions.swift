import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addAuctions(_ auctions: AuctionHouse, events: EventRoutes) {
        write("POST", "/auctions") { request in
            let new = try NewAuction(json: try request.json())
            return { () throws(DomainError) in
                let auction = try auctions.create(new)
                let id = auction["id"]?.stringValue ?? ""
                return .json(auction, status: 201, headers: [("Location", "/auctions/\(id)")])
            }
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
        write("POST", "/auctions/{id}/bids") { request in
            let id = request.parameter("id")
            guard auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            let bid = try NewBid(json: try request.json())
            return { () throws(DomainError) in
                let result = try auctions.bid(on: id, bid)
                let bidId = result.bid["id"]?.stringValue ?? ""
                return .json(["bid": result.bid, "auction": result.auction], status: 201,
                             headers: [("Location", "/auctions/\(id)/bids/\(bidId)")])
            }
        }
        add("GET", "/auctions/{id}/events") { request in
            try events.stream(request, topics: [AuctionHouse.topic(request.parameter("id"))])
        }
    }
}
