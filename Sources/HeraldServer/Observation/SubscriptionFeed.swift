import Foundation
import HeraldCore
import HeraldHTTP

/// An observer seen as an SSE feed: each core event becomes one message, its shared frame copied
/// straight into the stream's write buffer.
final class SubscriptionFeed: EventFeed {
    private let subscription: Subscription
    private let localizer: TripLocalizer?
    let expires: Date?

    init(_ subscription: Subscription, localizer: TripLocalizer? = nil, expires: Date? = nil) {
        self.subscription = subscription
        self.localizer = localizer
        self.expires = expires
    }

    func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
        let poll = subscription.drain { event in
            if let localizer, let frame = localizer.frame(for: event) { out.append(contentsOf: frame) } else { out.append(contentsOf: event.frame) }
            return out.count < limit
        }
        switch poll {
        case .events: return .taken
        case .idle: return .idle
        case .ended: return .finished
        }
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) { subscription.setWaker(waker) }

    func close() { subscription.cancel() }
}
