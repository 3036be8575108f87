import Foundation
import HeraldDomain
import HeraldJSON
import HeraldStore
import HeraldThreads

/// Presence across replicas, through PostgreSQL (`PostgresListener.send`): each replica sends what its
/// own streams watch when it changes (at most once a second), all of it to a replica that says
/// `hello`, and `alive` every `heartbeat`. A replica not heard from for `lease` is forgotten: its users
/// start their grace and are `left` after it.
final class PresenceExchange: Sendable {
    /// This replica's name in the exchange: random, new at each start.
    let replica: String
    private let listener: PostgresListener
    private let presence: Presence
    private let lease: Duration
    private let heartbeat: Duration

    private struct State {
        /// When each other replica was last heard from.
        var heard: [String: ContinuousClock.Instant] = [:]
        /// Topics whose users come in several messages (`more`), until the last.
        var partial: [String: [String: Presence.Counts]] = [:]
        var lastAlive: ContinuousClock.Instant?
    }

    private let state = Lock(State())
    /// A message's room for entries, under PostgreSQL's 8,000 bytes with the envelope.
    static let room = 7_000

    init(listener: PostgresListener, presence: Presence, lease: Duration = .seconds(15), heartbeat: Duration = .seconds(5)) {
        var generator = SystemRandomNumberGenerator()
        replica = String(generator.next() as UInt64, radix: 36)
        (self.listener, self.presence, self.lease, self.heartbeat) = (listener, presence, lease, heartbeat)
    }

    /// Says hello: the others answer with all they watch.
    func start() { send(["hello": .string(replica)]) }

    /// This replica stops: the others forget it at once.
    func stop() { send(["bye": .string(replica)]) }

    /// Once a second: sends what changed here, says `alive` when due, forgets replicas past their lease.
    func tick() {
        let changed = presence.takeChanged()
        if !changed.isEmpty { send(changed) }
        let now = ContinuousClock.now
        let (alive, expired) = state.withLock { state -> (Bool, [String]) in
            let alive = state.lastAlive.map { now - $0 >= heartbeat } ?? true
            if alive { state.lastAlive = now }
            let expired = state.heard.filter { now - $0.value > lease }.map(\.key)
            for replica in expired { state.heard[replica] = nil }
            return (alive, expired)
        }
        if alive { send(["alive": .string(replica)]) }
        for replica in expired { presence.forget(replica) }
    }

    /// A message of the exchange (false: not one, or this replica's own).
    func received(_ message: JSONValue) -> Bool {
        let from = ["hello", "alive", "bye", "presence"].lazy.compactMap { message[$0]?.stringValue }.first
        guard let from else { return false }
        guard from != replica else { return true }
        if message["bye"] != nil {
            state.withLock { $0.heard[from] = nil }
            presence.forget(from)
            return true
        }
        state.withLock { $0.heard[from] = ContinuousClock.now }
        if message["hello"] != nil {
            send(presence.allLocal())
        } else if message["presence"] != nil, case .array(let entries)? = message["topics"] {
            var complete: [String: Presence.Counts] = [:]
            state.withLock { state in
                for entry in entries {
                    guard let topic = entry["t"]?.stringValue, let watchers = entry["w"]?.intValue else { continue }
                    var counts = state.partial[from]?[topic] ?? Presence.Counts()
                    counts.watchers = Int(watchers)
                    if case .array(let users)? = entry["u"] {
                        for user in users {
                            guard case .array(let fields) = user, fields.count == 3, let sub = fields[0].stringValue,
                                  let streams = fields[1].intValue, let millis = fields[2].intValue else { continue }
                            counts.users[sub] = Presence.Visit(streams: Int(streams), since: Date(timeIntervalSince1970: Double(millis) / 1000))
                        }
                    }
                    if entry["more"] != nil {
                        state.partial[from, default: [:]][topic] = counts
                    } else {
                        state.partial[from]?[topic] = nil
                        complete[topic] = counts
                    }
                }
            }
            if !complete.isEmpty { presence.remote(from, complete) }
        }
        return true
    }

    private func send(_ members: [(String, JSONValue)]) {
        listener.send(String(decoding: JSONValue.object(members).bytes, as: UTF8.self))
    }

    private func send(_ object: [String: JSONValue]) { send(object.map { ($0.key, $0.value) }) }

    /// Sends `counts` in messages of at most `room` bytes of entries; a topic with many users goes in
    /// several entries, all but the last with `more`.
    private func send(_ counts: [String: Presence.Counts]) {
        var entries: [JSONValue] = [], size = 0
        func flush() {
            guard !entries.isEmpty else { return }
            send([("presence", .string(replica)), ("topics", .array(entries))])
            (entries, size) = ([], 0)
        }
        func add(_ entry: JSONValue) {
            let bytes = entry.bytes.count
            if size + bytes > Self.room { flush() }
            entries.append(entry)
            size += bytes + 1
        }
        for (topic, topicCounts) in counts.sorted(by: { $0.key < $1.key }) {
            var users: [JSONValue] = [], usersSize = 0
            for (sub, visit) in topicCounts.users.sorted(by: { $0.key < $1.key }) {
                let user: JSONValue = [.string(sub), .integer(visit.streams), .int(Int64(visit.since.timeIntervalSince1970 * 1000))]
                let bytes = user.bytes.count
                if usersSize + bytes > Self.room / 2 {
                    add(.object([("t", .string(topic)), ("w", .integer(topicCounts.watchers)), ("u", .array(users)), ("more", .bool(true))]))
                    (users, usersSize) = ([], 0)
                }
                users.append(user)
                usersSize += bytes + 1
            }
            add(.object([("t", .string(topic)), ("w", .integer(topicCounts.watchers)), ("u", .array(users))]))
        }
        flush()
    }
}
