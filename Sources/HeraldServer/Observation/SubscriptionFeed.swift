import HeraldCore
import HeraldHTTP

/// An observer seen as an SSE feed: each core event becomes one message, its shared data untouched.
final class SubscriptionFeed: EventFeed {
    private let subscription: Subscription

    init(_ subscription: Subscription) { self.subscription = subscription }

    func poll(limit: Int) -> FeedPoll {
        switch subscription.poll(limit: limit) {
        case .events(let events):
            .frames(events.map(\.frame))
        case .idle:
            .idle
        case .ended:
            .finished
        }
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) { subscription.setWaker(waker) }

    func close() { subscription.cancel() }
}
