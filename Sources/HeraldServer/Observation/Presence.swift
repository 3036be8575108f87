import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON
import HeraldThreads

/// Who watches each topic T, as the subject `presence/T`: the streams on T (`watchers`, anonymous ones
/// included) and the distinct token subjects among them (`users`).
///
/// A user's first stream on T is `joined`; when the last closes (or is dropped), the user is `left`
/// after `grace` unless a stream of theirs comes back meanwhile (a reloaded tab is neither). The count
/// goes out as `watchers`, at most once a second per topic. Presence events are news of the moment,
/// like a countdown's ticks: never stored, never in the replay history; a presence observer that
/// reconnects gets a fresh snapshot.
///
/// On replicas each one sends what its own streams watch to the others (`PresenceExchange`), which
/// add it to theirs, so every replica shows the same users; one that stops sending is forgotten after
/// its lease, and its users are `left`.
final class Presence: Sendable {
    static let prefix = "presence/"

    /// What one Herald's streams on one topic are: their count, and the users among them.
    struct Counts: Sendable, Equatable {
        var watchers = 0
        var users: [String: Visit] = [:]

        var isEmpty: Bool { watchers == 0 && users.isEmpty }
    }

    struct Visit: Sendable, Equatable {
        var streams: Int
        var since: Date
    }

    /// A user as the subject shows them: present since `since`, or leaving at `leavingAt` (grace).
    private struct Shown {
        var since: Date
        var leavingAt: Date?
    }

    private struct Topic {
        var shown: [String: Shown] = [:]
        /// The count last sent as `watchers` (nil: none yet).
        var sentWatchers: Int?
        var watchers = 0
        var truncated = false
    }

    private struct State {
        var local: [String: Counts] = [:]
        /// Other replicas' counts, by replica, then topic.
        var remote: [String: [String: Counts]] = [:]
        var topics: [String: Topic] = [:]
        /// Topics whose local counts changed since the exchange last sent them (kept only when there is
        /// an exchange to take them).
        var changed: Set<String> = []
    }

    private let state = Lock(State())
    private let hub: Hub
    private let clock: any DomainClock
    let grace: TimeInterval
    let userLimit: Int
    /// Other replicas take this one's changes (`takeChanged`).
    let exchanged: Bool
    /// The next tick's timer, on the process's timer thread (`herald-timers`); nil and stopped after `stop`.
    private let ticks = Lock<(timer: (any TimerHandle)?, stopped: Bool)>((nil, false))
    /// Ticks follow the wall clock, whatever clock the domain reads (tests move theirs by hand).
    private let ticker = SystemClock()

    init(hub: Hub, clock: any DomainClock, grace: TimeInterval, userLimit: Int, exchanged: Bool = false) {
        (self.hub, self.clock, self.grace, self.userLimit, self.exchanged) = (hub, clock, grace, userLimit, exchanged)
    }

    /// The topic T of `presence/T`, or nil for any other topic.
    static func watched(_ topic: String) -> String? {
        topic.hasPrefix(prefix) ? String(topic.dropFirst(prefix.count)) : nil
    }

    // MARK: - Streams

    /// A stream counted in: what its feed keeps, and closes once when the stream closes (its feed's
    /// `close`, which the engine calls exactly once). Kept in the feed, not a closure: a closure's
    /// context and its weak box were two allocations more for every stream.
    struct Ticket: Sendable {
        fileprivate weak var presence: Presence?
        fileprivate let topics: [String]
        fileprivate let subject: String?

        func close() { presence?.change(topics, by: -1, subject: subject) }
    }

    /// A stream of `topics` opened, for `subject` (nil: anonymous): counted in until its ticket closes;
    /// nil when it watches only presence topics, which count no one.
    func opened(_ topics: [String], subject: String?) -> Ticket? {
        // The stream's own array when no topic is a presence topic (the usual case): one allocation
        // fewer for every stream.
        let watched = topics.allSatisfy({ Self.watched($0) == nil }) ? topics : topics.filter { Self.watched($0) == nil }
        guard !watched.isEmpty else { return nil }
        change(watched, by: 1, subject: subject)
        return Ticket(presence: self, topics: watched, subject: subject)
    }

    fileprivate func change(_ topics: [String], by delta: Int, subject: String?) {
        guard let subject else {
            // Anonymous: only the count moves, which goes out at the next tick; no user joins or leaves.
            state.withLock { state in
                for topic in topics { count(topic, by: delta, in: &state) }
            }
            return
        }
        let now = clock.now
        state.withLock { state in
            for topic in topics {
                var counts = state.local[topic, default: Counts()]
                counts.watchers += delta
                var visit = counts.users[subject] ?? Visit(streams: 0, since: now)
                visit.streams += delta
                counts.users[subject] = visit.streams > 0 ? visit : nil
                state.local[topic] = counts.isEmpty ? nil : counts
                if exchanged { state.changed.insert(topic) }
                reconcile(topic, in: &state, at: now)
            }
        }
    }

    /// An anonymous stream on `topic` opened or closed: what `reconcile` does when no user changed,
    /// without copying the topic's users (every stream's arrival and departure comes here).
    private func count(_ topic: String, by delta: Int, in state: inout State) {
        state.local[topic, default: Counts()].watchers += delta
        let watchers = state.local[topic]?.watchers ?? 0
        if state.local[topic]?.isEmpty == true { state.local[topic] = nil }
        if exchanged { state.changed.insert(topic) }
        var all = watchers
        for replica in state.remote.values { all += replica[topic]?.watchers ?? 0 }
        state.topics[topic, default: Topic()].watchers = all
        setValue(topic, in: state)
        forgetIfIdle(topic, in: &state)
    }

    /// `presence/topic`'s value, described only if the subject is observed.
    private func setValue(_ topic: String, in state: State) {
        let presenceTopic = Self.prefix + topic
        hub.setWhileObserved(presenceTopic) { describe(topic, as: presenceTopic, in: state).bytes }
    }

    /// A topic nobody watches, with nobody in their grace and no count left to send, is forgotten.
    private func forgetIfIdle(_ topic: String, in state: inout State) {
        if let subject = state.topics[topic], subject.shown.isEmpty, subject.watchers == 0,
           subject.sentWatchers == 0 || subject.sentWatchers == nil {
            state.topics[topic] = nil
            shrink(&state)
        }
    }

    /// After a burst of topics, their places go too (`Dictionary.shrinkIfSparse`), and the hub gives
    /// the memory back at its next trim.
    private func shrink(_ state: inout State) {
        hub.released(places: state.topics.shrinkIfSparse() + state.local.shrinkIfSparse())
    }

    // MARK: - Other replicas

    /// What this Herald's streams watch on the topics that changed since the last call (an empty
    /// `Counts` for a topic nobody here watches any more): the exchange sends it to the others.
    func takeChanged() -> [String: Counts] {
        state.withLock { state in
            defer { state.changed = [] }
            return Dictionary(uniqueKeysWithValues: state.changed.map { ($0, state.local[$0] ?? Counts()) })
        }
    }

    /// Everything this Herald's streams watch (for a replica that just came).
    func allLocal() -> [String: Counts] { state.withLock { $0.local } }

    /// Another replica's counts for these topics (an empty one: it watches the topic no more).
    func remote(_ replica: String, _ counts: [String: Counts]) {
        let now = clock.now
        state.withLock { state in
            for (topic, topicCounts) in counts {
                state.remote[replica, default: [:]][topic] = topicCounts.isEmpty ? nil : topicCounts
                reconcile(topic, in: &state, at: now)
            }
        }
    }

    /// A replica whose lease ran out (or that said it stops): what it watched is gone.
    func forget(_ replica: String) {
        let now = clock.now
        state.withLock { state in
            guard let topics = state.remote.removeValue(forKey: replica) else { return }
            for topic in topics.keys { reconcile(topic, in: &state, at: now) }
        }
    }

    // MARK: - The subject

    /// Every Herald's counts on `topic`, together.
    private func merged(_ topic: String, in state: State) -> Counts {
        var all = state.local[topic] ?? Counts()
        for replica in state.remote.values {
            guard let counts = replica[topic] else { continue }
            all.watchers += counts.watchers
            for (subject, visit) in counts.users {
                let mine = all.users[subject]
                all.users[subject] = Visit(streams: (mine?.streams ?? 0) + visit.streams, since: min(mine?.since ?? visit.since, visit.since))
            }
        }
        return all
    }

    /// Brings `presence/topic` up to the counts: users who came are `joined` (unless back within
    /// their grace), users who went start their grace; the snapshot value follows.
    private func reconcile(_ topic: String, in state: inout State, at now: Date) {
        let counts = merged(topic, in: state)
        var subject = state.topics[topic] ?? Topic()
        let wasTruncated = subject.truncated
        subject.watchers = counts.watchers
        subject.truncated = counts.users.count > userLimit
        var events: [(EventName, String)] = []
        for (user, visit) in counts.users {
            if var shown = subject.shown[user] {
                shown.leavingAt = nil
                subject.shown[user] = shown
            } else {
                subject.shown[user] = Shown(since: visit.since)
                events.append(("joined", user))
            }
        }
        for (user, shown) in subject.shown where counts.users[user] == nil && shown.leavingAt == nil {
            subject.shown[user]?.leavingAt = now.addingTimeInterval(grace)
        }
        if grace <= 0 { events += leave(&subject, at: now) }
        state.topics[topic] = subject
        publish(topic, subject, events, afresh: subject.truncated != wasTruncated, in: state)
        forgetIfIdle(topic, in: &state)
    }

    /// Removes the users whose grace ran out; their `left` events.
    private func leave(_ subject: inout Topic, at now: Date) -> [(EventName, String)] {
        var events: [(EventName, String)] = []
        for (user, shown) in subject.shown {
            if let leavingAt = shown.leavingAt, leavingAt <= now {
                subject.shown[user] = nil
                events.append(("left", user))
            }
        }
        return events.sorted { $0.1 < $1.1 }
    }

    /// Sets the subject's value and publishes `events` (none while the topic has more users than the
    /// limit: then only counts go out). When the topic crosses the limit, either way, its watchers get a
    /// fresh `snapshot` instead (`truncated`, or the whole list again), so that a client that applies
    /// the events always holds what `GET /presence` answers.
    private func publish(_ topic: String, _ subject: Topic, _ events: [(EventName, String)], afresh: Bool = false, in state: State) {
        setValue(topic, in: state)
        let presenceTopic = Self.prefix + topic
        if afresh {
            _ = hub.publish(durable: false, topic: presenceTopic, name: .snapshot, data: describe(topic, as: presenceTopic, in: state).bytes)
            return
        }
        guard !subject.truncated else { return }
        for (name, user) in events {
            let data = JSONValue.object([("topic", .string(presenceTopic)), ("sub", .string(user))]).bytes
            _ = hub.publish(durable: false, topic: presenceTopic, name: name, data: data)
        }
    }

    /// `{"topic": name, "watchers": N, "users": [{sub, streams, since}]}`, or `"truncated": true` instead
    /// of `users` past the limit. A user in their grace is listed with 0 streams until `left`.
    private func describe(_ topic: String, as name: String, in state: State) -> JSONValue {
        let counts = merged(topic, in: state)
        var members: [(String, JSONValue)] = [("topic", .string(name)), ("watchers", .integer(counts.watchers))]
        if counts.users.count > userLimit {
            members.append(("truncated", .bool(true)))
            return .object(members)
        }
        var users = counts.users
        for (user, shown) in state.topics[topic]?.shown ?? [:] where users[user] == nil {
            users[user] = Visit(streams: 0, since: shown.since)
        }
        members.append(("users", .array(users.sorted { $0.key < $1.key }.map { user, visit in
            ["sub": .string(user), "streams": .integer(visit.streams), "since": .string(Timestamp.format(visit.since))]
        })))
        return .object(members)
    }

    /// Runs `subscribe` with the current state of each `presence/T` among `topics`, what a new observer
    /// of it starts from (the hub keeps it only while observed). With presence topics it runs under
    /// presence's lock, as a change's publication does, so no change falls between the state and the
    /// subscription.
    func subscribing<T>(_ topics: [String], _ subscribe: ([Hub.Update]) throws -> T) rethrows -> T {
        let watched = topics.compactMap { presenceTopic in Self.watched(presenceTopic).map { (presenceTopic, $0) } }
        guard !watched.isEmpty else { return try subscribe([]) }
        return try state.withLock { state in
            try subscribe(watched.map { presenceTopic, topic in
                Hub.Update(topic: presenceTopic, value: describe(topic, as: presenceTopic, in: state).bytes)
            })
        }
    }

    /// `GET /presence?topic=T`: the snapshot a stream of `presence/T` starts with, named `T`.
    func answer(_ topic: String) -> JSONValue { state.withLock { describe(topic, as: topic, in: $0) } }

    // MARK: - The second's work

    /// Ends the graces that ran out (`left`) and sends each count that changed (`watchers`).
    func tick() {
        let now = clock.now
        state.withLock { state in
            for topic in Array(state.topics.keys) {
                guard var subject = state.topics[topic] else { continue }
                let events = leave(&subject, at: now)
                var changed = !events.isEmpty
                if subject.sentWatchers != subject.watchers {
                    subject.sentWatchers = subject.watchers
                    let presenceTopic = Self.prefix + topic
                    let data = JSONValue.object([("topic", .string(presenceTopic)), ("watchers", .integer(subject.watchers))]).bytes
                    _ = hub.publish(durable: false, topic: presenceTopic, name: "watchers", data: data)
                    changed = true
                }
                state.topics[topic] = subject
                if changed { publish(topic, subject, events, in: state) }
                if subject.shown.isEmpty, subject.watchers == 0 { state.topics[topic] = nil }
            }
            shrink(&state)
        }
    }

    /// Ticks once a second until `stop`, on the timer thread every clock shares, not on a thread of
    /// its own: each tick schedules the next.
    func start(every interval: TimeInterval = 1, also: (@Sendable () -> Void)? = nil) {
        scheduleTick(every: interval, also: also)
    }

    private func scheduleTick(every interval: TimeInterval, also: (@Sendable () -> Void)?) {
        let timer = ticker.schedule(at: ticker.now.addingTimeInterval(interval)) { [weak self] in
            guard let self else { return }
            tick()
            also?()
            scheduleTick(every: interval, also: also)
        }
        let stopped = ticks.withLock { ticks in
            if !ticks.stopped { ticks.timer = timer }
            return ticks.stopped
        }
        // Stopped while this tick ran: the next one never comes.
        if stopped { timer.cancel() }
    }

    func stop() {
        ticks.withLock { ticks in
            ticks.stopped = true
            defer { ticks.timer = nil }
            return ticks.timer
        }?.cancel()
    }
}
