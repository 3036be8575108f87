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
        add("GET", "/auctions") { request in
            let paging = try Paging(request)
            let status = request.query("status").map { Auction.Status(rawValue: $0) }
            if status == .some(nil), let name = request.query("status") {
                throw Problem(status: 400, detail: "status must be open or closed, not '\(name)'")
            }
            let page = paging.page(auctions.auctions(status: status ?? nil, after: try paging.numericAfter()))
            let now = auctions.now
            return paging.response("auctions", page.entries.map { $0.json(at: now) }, more: page.more,
                                   lastKey: page.entries.last?.id, request: request)
        }
        add("GET", "/auctions/{id}") { request in
            Response(status: 200, headers: [("Content-Type", "application/json")], body: .shared(try auctions.encoded(request.parameter("id"))))
        }
        add("GET", "/auctions/{id}/bids") { request in
            let paging = try Paging(request)
            let page = paging.page(try auctions.bids(on: request.parameter("id"), after: try paging.numericAfter()))
            return paging.response("bids", page.entries.map(\.json), more: page.more, lastKey: page.entries.last?.id, request: request)
        }
        add("GET", "/auctions/{id}/bids/{bid}") { request in
            let id = request.parameter("id"), bidId = request.parameter("bid")
            guard auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            guard bidId.utf8.count <= 18, bidId.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(bidId) else {
                throw DomainError.notFound("bid", bidId)
            }
            return .json(try auctions.bid(number, on: id).json)
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
