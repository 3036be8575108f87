import HeraldCore
import HeraldHTTP

/// An observer seen as an SSE feed: each core event becomes one message, its shared data untouched.
final class SubscriptionFeed: EventFeed {
    private let subscription: Subscription
    private let localizer: TripLocalizer?

    init(_ subscription: Subscription, localizer: TripLocalizer? = nil) {
        self.subscription = subscription
        self.localizer = localizer
    }

    func poll(limit: Int) -> FeedPoll {
        switch subscription.poll(limit: limit) {
        case .events(let events):
            .frames(localizer.map { localizer in events.map { localizer.frame(for: $0) ?? $0.frame } } ?? events.map(\.frame))
        case .idle:
            .idle
        case .ended:
            .finished
        }
    }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) { subscription.setWaker(waker) }

    func close() { subscription.cancel() }
}
