import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import Synchronization

extension Routes {
    mutating func addAuctions(_ auctions: AuctionHouse, events: EventRoutes) {
        let encodings = AuctionEncodings()
        write("POST", "/auctions", topic: "auctions/*") { request, _ in
            let new = try NewAuction(json: try request.json())
            return { () throws(DomainError) in
                let auction = try auctions.create(new)
                return .json(auction.json(at: auctions.now), status: 201, headers: [("Location", "/auctions/\(auction.id)")])
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
            let auction = try auctions.get(request.parameter("id"))
            return Response(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(encodings.bytes(of: auction, at: auctions.now)))
        }
        add("GET", "/auctions/{id}/bids") { request in
            let paging = try Paging(request)
            let page = paging.page(try auctions.bids(on: request.parameter("id"), after: try paging.numericAfter()))
            return paging.response("bids", page.entries.map(\.json), more: page.more, lastKey: page.entries.last?.id, request: request)
        }
        add("GET", "/auctions/{id}/bids/{bid}") { request in
            let id = request.parameter("id"), bidId = request.parameter("bid")
            guard auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            guard bidId.utf8.count <= 18, bidId.isASCIIDigits, let number = Int(bidId) else {
                throw DomainError.notFound("bid", bidId)
            }
            return .json(try auctions.bid(number, on: id).json)
        }
        let replicated = replicated
        write("POST", "/auctions/{id}/bids", topic: "auctions/{id}") { request, caller in
            let id = request.parameter("id")
            guard replicated || auctions.exists(id) else { throw DomainError.notFound("auction", id) }
            let bid = try NewBid(json: try request.json(), as: caller)
            return { () throws(DomainError) in
                let result = try auctions.bid(on: id, bid)
                return .json(["bid": result.bid.json, "auction": result.auction.json(at: auctions.now)], status: 201,
                             headers: [("Location", "/auctions/\(id)/bids/\(result.bid.id)")])
            }
        }
        add("GET", "/auctions/{id}/events") { request in
            try events.stream(request, topics: [AuctionHouse.topic(request.parameter("id"))])
        }
    }
}

/// Each auction's JSON bytes, encoded once for each state a reader can see (status, bid count and
/// the whole seconds left): every `GET /auctions/{id}` between two changes shares them, and the
/// server keeps the finished response for shared bytes.
final class AuctionEncodings: Sendable {
    private struct Encoding {
        let status: Auction.Status
        let bids: Int
        let remaining: Int?
        let bytes: [UInt8]
    }

    private let encodings = Mutex<[String: Encoding]>([:])

    func bytes(of auction: Auction, at now: Date) -> [UInt8] {
        let remaining = auction.countdown.remaining(at: now)
        if let kept = encodings.withLock({ $0[auction.id] }), kept.status == auction.status, kept.bids == auction.bids.count,
           kept.remaining == remaining {
            return kept.bytes
        }
        let bytes = auction.json(at: now).bytes
        encodings.withLock { $0[auction.id] = Encoding(status: auction.status, bids: auction.bids.count, remaining: remaining, bytes: bytes) }
        return bytes
    }
}
