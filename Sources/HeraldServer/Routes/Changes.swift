import Foundation
import HTTPTypes
import HeraldAuth
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldThreads

/// `GET /changes?topic=…&after=N&wait=S`: what a stream of those topics would have sent after event
/// `N`, as one JSON answer, for clients that cannot hold a stream. With nothing newer, the request is
/// held (on the stream engine, as a stream is) until an event comes or `wait` seconds pass.
struct Changes: Sendable {
    let events: EventRoutes

    /// Longest `wait`, in seconds.
    static let maxWait = 30
    /// Most events in one answer; `last` then says where the next request goes on from.
    static let maxEvents = 1_000

    func answer(_ request: Request) throws -> Response {
        let (topics, filters) = try EventRoutes.topics(request)
        if let presence = topics.first(where: { Presence.watched($0) != nil }) {
            throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(presence))' sends no event with an id, so /changes can never answer it: "
                          + "watch it with a stream, or read GET /presence")
        }
        let named = topics.map(NamedTopic.init)
        let expires = try events.access.watcher(request, topics: named)?.expires
        try events.checkTopics(named)
        let wait: Int
        switch request.query("wait") {
        case nil: wait = 0
        case let text?:
            guard text.isASCIIDigits, text.utf8.count <= 2, let seconds = Int(text), seconds <= Self.maxWait else {
                throw Problem(status: .badRequest, detail: "wait must be a whole number of seconds from 0 to \(Self.maxWait), not '\(RequestGuard.printable(text))'")
            }
            wait = seconds
        }
        guard let text = request.query("after") else {
            // No position yet: the topics' snapshots, as a stream starts with them, and where to go on
            // from (`snapshot=false`: only where, after reading the state some other way).
            switch request.query("snapshot") {
            case "false", "0": return ChangesPoll.response([], last: events.hub.lastEventId)
            case nil, "true", "1": return snapshots(of: topics, filters: filters)
            case let other?: throw Problem(status: .badRequest, detail: "snapshot must be true or false, not '\(RequestGuard.printable(other))'")
            }
        }
        guard text.isASCIIDigits, text.utf8.count <= 20, let after = UInt64(text) else {
            throw Problem(status: .badRequest, detail: "after must be an event id (digits), not '\(RequestGuard.printable(text))'")
        }
        let subscription = events.hub.subscribe(to: topics, collections: filters, resume: .after(after), queueLimit: events.queueLimit,
                                                filter: try events.filter(request, topics: topics))
        let now = events.access.now()
        let until = min(now.addingTimeInterval(TimeInterval(wait)), expires ?? .distantFuture)
        let poll = ChangesPoll(subscription, after: after, until: until, waiting: until.timeIntervalSince(now))
        if poll.isStale {
            poll.close()
            throw Problem(status: .conflict, detail: "event \(after) is older than the history kept (or newer than the last): "
                          + "read the state again (the list or the subject), then ask for changes after the id it came with "
                          + "(a stream's first event, or /changes without after)", extra: [("lastEventId", .string(String(events.hub.lastEventId)))])
        }
        if wait == 0 || poll.hasEvents {
            defer { poll.close() }
            return poll.answer(final: true) ?? ChangesPoll.response([], last: after)
        }
        return .held(poll)
    }
}

extension Changes {
    /// The snapshots a stream of `topics` starts with (a large collection's in several pieces), and the
    /// id they reflect: the `after` of the next request.
    func snapshots(of topics: [String], filters: [String: CollectionFilter]) -> Response {
        // Every first event is queued when it subscribes: one poll takes them all.
        let subscription = events.hub.subscribe(to: topics, collections: filters, resume: .now(snapshot: true), queueLimit: .max)
        defer { subscription.cancel() }
        guard case .events(let taken) = subscription.poll() else { return ChangesPoll.response([], last: subscription.startedAt) }
        return ChangesPoll.response(taken.filter { $0.name == .snapshot }, last: subscription.startedAt)
    }
}

/// One `/changes` request's subscription, until it is answered: the replay after `after`, then the
/// live events that come while it is held.
final class ChangesPoll: HeldRequest {
    private struct State {
        var events: [Event] = []
        var stale = false
        var ended = false
        /// The wait ran out (its timer fired): the answer is due now, with or without events.
        var timedOut = false
        var timer: (any TimerHandle)?
        var closed = false
    }

    private let subscription: Subscription
    private let after: UInt64
    let until: Date
    /// When the wait runs out by the wall clock, whatever clock the domain reads.
    private let deadline: ContinuousClock.Instant
    private let state = Lock(State())
    /// The wait's end is a timer on the process's timer thread (`herald-timers`), exact to the
    /// millisecond; the engine's once-a-second expiry (`until`) is only the backstop.
    private static let timers = SystemClock()

    init(_ subscription: Subscription, after: UInt64, until: Date, waiting: TimeInterval) {
        self.subscription = subscription
        self.after = after
        self.until = until
        deadline = .now + .milliseconds(Int64(max(waiting, 0) * 1_000))
        collect()
    }

    var waitRanOut: Bool { state.withLock { $0.timedOut } || ContinuousClock.now >= deadline }

    /// `after` is older than the history, or from the future: the hub answered with a resync.
    var isStale: Bool { state.withLock { $0.stale } }
    var hasEvents: Bool { state.withLock { !$0.events.isEmpty } }

    /// Takes what the subscription has queued: durable events only (a countdown's tick has no id to
    /// go on from, and a replay never holds one), up to `Changes.maxEvents`.
    private func collect() {
        state.withLock { state in
            while state.events.count < Changes.maxEvents, !state.stale, !state.ended {
                switch subscription.poll(limit: Changes.maxEvents - state.events.count) {
                case .idle: return
                case .ended: state.ended = true
                case .events(let events):
                    for event in events {
                        if event.name == "resync" { state.stale = true }
                        if event.durable, event.name != .position, event.name != .snapshot { state.events.append(event) }
                    }
                }
            }
        }
    }

    func answer(final: Bool) -> Response? {
        collect()
        let (events, ended, timedOut) = state.withLock { ($0.events, $0.ended, $0.timedOut) }
        guard !events.isEmpty || final || ended || timedOut else { return nil }
        // Every event up to where it subscribed is in its replay: with all of them taken, the answer
        // covers that far even when they were other topics'.
        let truncated = events.count >= Changes.maxEvents
        let last = truncated ? events.last?.id ?? after : max(events.last?.id ?? after, subscription.startedAt, after)
        return Self.response(events, last: last)
    }

    /// Also starts the wait's timer, which wakes the request when the wait runs out.
    func setWaker(_ waker: @escaping @Sendable (Bool) -> Void) {
        subscription.setWaker(waker)
        let timer = Self.timers.schedule(at: Self.timers.now.addingTimeInterval(max(ContinuousClock.now.duration(to: deadline) / .seconds(1), 0))) {
            [weak self] in
            self?.state.withLock { $0.timedOut = true }
            waker(false)
        }
        let closed = state.withLock { state in
            if !state.closed { state.timer = timer }
            return state.closed
        }
        if closed { timer.cancel() }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            defer { state.timer = nil }
            return state.timer
        }?.cancel()
        subscription.cancel()
    }

    /// `{"events":[{"id":…,"event":…,"data":…}],"last":…}`, each event's data as it was published;
    /// never stored by a cache (`no-store`): the same URL answers differently as events come.
    static func response(_ events: [Event], last: UInt64) -> Response {
        let listed = events.map { event -> JSONValue in
            .object([("id", .string(String(event.id))), ("event", .string(event.name.text)),
                     ("data", event.data.isEmpty ? .null : .encoded(event.data))])
        }
        return .json(.object([("events", .array(listed)), ("last", .string(String(last)))]), headers: [.cacheControl: "no-store"])
    }

}
