import Foundation
import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import Synchronization

extension Routes {
    mutating func addAuctions(_ auctions: AuctionHouse, currency: CurrencySetting, events: EventRoutes) {
        let encodings = AuctionEncodings()
        write(.post, "/auctions", topic: "auctions/*") { request, _ in
            // The new auction has no version yet: an `If-Match` cannot hold (RFC 9110 §13.1.1).
            try Preconditions(request).require(nil, "a new auction")
            let new = try NewAuction(json: try request.json())
            return { batch throws(DomainError) in
                let auction = try auctions.create(new, defaultCurrency: currency.latest, in: batch)
                return .json(auction.json(at: auctions.now), status: .created, headers: [.location: "/auctions/\(auction.id)"])
            }
        }
        read("/auctions") { request in
            try EventRoutes.refuseUnknownParameters(request, of: AuctionHouse.collectionTopic, known: EventRoutes.listParameters)
            let paging = try Paging(request)
            let status = request.query("status").map { Auction.Status(rawValue: $0) }
            if status == .some(nil), let name = request.query("status") {
                throw Problem(status: .badRequest, detail: "status must be open or closed, not '\(name)'")
            }
            let page = paging.page(auctions.auctions(status: status ?? nil, after: try paging.numericAfter()))
            let now = auctions.now
            return paging.response("auctions", page.entries.map { $0.json(at: now) }, more: page.more,
                                   lastKey: page.entries.last?.id.description, request: request)
        }
        add(.get, "/auctions/events") { request in try events.streamCollection(request, AuctionHouse.collectionTopic) }
        read("/auctions/{id}", parameter: "id") { text throws(DomainError) in
            let auction = try auctions.get(try Request.auctionID(text))
            let (bytes, etag) = encodings.encoded(auction, at: auctions.now)
            // Without a running countdown, nothing in the auction's JSON changes with time.
            return (bytes, etag, !auction.countdown.isRunning)
        }
        read("/auctions/{id}/bids") { request in
            let paging = try Paging(request)
            let page = paging.page(try auctions.bids(on: try request.auctionID(), after: try paging.numericAfter()))
            return paging.response("bids", page.entries.map(\.json), more: page.more, lastKey: page.entries.last?.number.description,
                                   request: request)
        }
        read("/auctions/{id}/bids/{bid}") { request in
            let id = try request.auctionID(), bidId = request.parameter("bid")
            guard auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            // Leading zeros name the same bid (`/bids/007` is bid 7), as they always have.
            guard bidId.utf8.count <= 18, bidId.isASCIIDigits, let number = Int(bidId) else {
                throw DomainError.notFound("bid", bidId)
            }
            return .json(try auctions.bid(BidNumber(number), on: id).json)
        }
        let (replicated, journal) = (replicated, journal)
        write(.post, "/auctions/{id}/bids", topic: "auctions/{id}") { request, caller in
            let id = try request.auctionID()
            guard replicated || auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            let bid = try NewBid(json: try request.json(), as: caller)
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                // `If-Match`: a bid only if nobody bid since the client read the auction.
                if !conditions.isEmpty { try conditions.check(auctions.latest(id).map(EntityTag.of), "auction \(id)") }
                let result = try auctions.bid(on: id, bid, in: batch)
                // The answer is the bid's event without its topic: the bytes it was published with.
                let body = journal.takePostedPayload(in: batch)
                    ?? JSONValue.object([("bid", result.bid.json), ("auction", result.auction.json(at: auctions.now))]).bytes
                return Response(status: .created, headers: Response.jsonHeaders + [.location: "/auctions/\(id)/bids/\(result.bid.number)",
                                                                                      .eTag: EntityTag.of(result.auction)],
                                body: .bytes(body))
            }
        }
        add(.get, "/auctions/{id}/events") { request in
            // The topic as the client named it: one that names no auction is 404 there.
            try events.stream(request, topics: ["auctions/" + request.parameter("id")])
        }
    }
}

extension Request {
    /// The auction the path names (`{id}`): 404 when it could name none (`01`, `x`).
    func auctionID() throws(DomainError) -> AuctionID { try Self.auctionID(parameter("id")) }

    /// The auction `text` names: 404 when it could name none.
    static func auctionID(_ text: String) throws(DomainError) -> AuctionID {
        guard let id = AuctionID(text) else { throw DomainError.notFound("auction", text) }
        return id
    }

    /// The trip `text` names; 404 when it names none (`abc`, `01`).
    static func tripID(_ text: String) throws(DomainError) -> TripID {
        guard let id = TripID(text) else { throw DomainError.notFound("trip", text) }
        return id
    }
}
