import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldThreads
import Synchronization

/// Each auction's JSON bytes, encoded once for each state a reader can see (status, bid count and
/// the whole seconds left), and its entity tag, made once for each status and bid count (what it
/// covers changes only with a bid or the close): every `GET /auctions/{id}` between two changes
/// answers with the same bytes and tag instead of making them again (the tag was 13 % of a GET).
final class AuctionEncodings: Sendable {
    private struct Encoding {
        let status: Auction.Status
        let bids: Int
        let remaining: Int?
        let bytes: [UInt8]
        let etag: String
    }

    private let encodings = Lock<[AuctionID: Encoding]>([:])

    /// The auction's JSON at `now` and its entity tag (`EntityTag.of`).
    func encoded(_ auction: Auction, at now: Date) -> (bytes: [UInt8], etag: String) {
        let remaining = auction.countdown.remaining(at: now)
        let kept = encodings.withLock { $0[auction.id] }.flatMap { $0.status == auction.status && $0.bids == auction.bids.count ? $0 : nil }
        if let kept, kept.remaining == remaining { return (kept.bytes, kept.etag) }
        let bytes = auction.json(at: now).bytes
        let etag = kept?.etag ?? EntityTag.of(auction)
        encodings.withLock { $0[auction.id] = Encoding(status: auction.status, bids: auction.bids.count, remaining: remaining, bytes: bytes, etag: etag) }
        return (bytes, etag)
    }
}
