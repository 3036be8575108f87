import Foundation
import HeraldCore
import HeraldHTTP

/// An observer seen as an SSE feed: each core event becomes one message, its shared frame copied
/// straight into the stream's write buffer.
final class SubscriptionFeed: EventFeed, @unchecked Sendable {
    // Unchecked: made on the server's thread, then read and drained only by the engine's thread that
    // owns its stream (handed over with it); the subscription it wraps is locked for the hub.
    private let subscription: Subscription
    private let localizer: TripLocalizer?
    let expires: Date?
    /// Events taken (position markers are not events); the stream engine's thread only.
    private(set) var eventsTaken = 0
    private(set) var overflowed = false

    init(_ subscription: Subscription, localizer: TripLocalizer? = nil, expires: Date? = nil) {
        self.subscription = subscription
        self.localizer = localizer
        self.expires = expires
    }

    func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
        var taken = 0
        let poll = subscription.drain { event in
            if event.name != .position { taken += 1 }
            if let localizer, let frame = localizer.frame(for: event) { out.append(contentsOf: frame) } else { out.append(contentsOf: event.frame) }
            return out.count < limit
        }
        eventsTaken += taken
        switch poll {
        case .taken: return .taken
        case .idle: return .idle
        case .ended(let end):
            overflowed = end == .overflowed
            return .finished
        }
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) { subscription.setWaker(waker) }

    func close() { subscription.cancel() }

    /// Its first events are all taken: they never come back, so the subscription's lock is not asked
    /// again (the engine asks before every take; measured at 3 % of its time with 1,000 streams).
    private var caughtUp = false

    var catchingUp: Bool {
        guard !caughtUp else { return false }
        caughtUp = !subscription.catchingUp
        return !caughtUp
    }
}
