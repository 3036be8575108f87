import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldThreads
import Synchronization

/// Each auction's JSON bytes, encoded once for each state a reader can see (status, bid count and
/// the whole seconds left): every `GET /auctions/{id}` between two changes answers with the same
/// bytes instead of encoding the auction again.
final class AuctionEncodings: Sendable {
    private struct Encoding {
        let status: Auction.Status
        let bids: Int
        let remaining: Int?
        let bytes: [UInt8]
    }

    private let encodings = Lock<[AuctionID: Encoding]>([:])

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
