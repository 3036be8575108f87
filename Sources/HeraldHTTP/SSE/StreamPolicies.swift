/// The stream engine's policies as small state machines, apart from its I/O: each is told what
/// happened and what time it is, and says what to do. `StreamEngine` does it; the tests drive them
/// with times of their own, without a socket or a sleep.

/// When heartbeat rounds fall due: every `interval` from the start, never two at once after a stall
/// (a late round is followed by the next a whole interval later).
struct HeartbeatSchedule {
    let interval: Duration
    private(set) var due: Duration

    /// Rounds every `interval` from `start` (times are durations since any fixed point).
    init(every interval: Duration, from start: Duration) {
        self.interval = interval
        due = start + interval
    }

    /// How long the engine may sleep at `now` before the next round: zero when one is due, at most
    /// `cap` (the engine wakes once a second whatever happens).
    func wait(at now: Duration, cap: Duration = .seconds(1)) -> Duration {
        min(max(due - now, .zero), cap)
    }

    /// Whether a round is due at `now`; if so, the next is scheduled: an interval after this one was
    /// due, or after `now` when the engine was held up past that. (It was `now` itself: after a stall,
    /// two rounds ran back to back, and a stream whose socket was full at the stall counted as a client
    /// that stopped reading through two rounds at once.)
    mutating func take(at now: Duration) -> Bool {
        guard now >= due else { return false }
        due = due + interval > now ? due + interval : now + interval
        return true
    }
}

/// Whether a stream's client still reads, judged once a heartbeat round: a stream that wrote nothing
/// since the last round gets a heartbeat (which also probes a client that half-closed: one that is
/// gone answers with a reset); one whose socket stayed full through two rounds has a client that
/// stopped reading (it resumes with `Last-Event-ID` when it reconnects).
struct Liveness: Equatable {
    /// What a round does with the stream.
    enum Verdict: Equatable {
        /// Nothing: it wrote since the last round, or it has bytes waiting for room.
        case nothing
        /// Write a heartbeat comment.
        case heartbeat
        /// Drop it: its client stopped reading.
        case stoppedReading
    }

    /// Rounds that may find the socket full in a row before the client counts as stopped.
    static let blockedRoundsAllowed: UInt8 = 2

    /// Rounds in a row that found the socket full.
    private(set) var blockedRounds: UInt8 = 0
    /// Nothing written since the last round.
    private(set) var quiet = true

    /// Some bytes went out.
    mutating func wrote() { quiet = false }

    /// The round's heartbeat went out: it is not news, so the stream is still quiet for the next round.
    mutating func sentHeartbeat() { quiet = true }

    /// Everything pending went out: the socket has room again.
    mutating func drained() { blockedRounds = 0 }

    /// A heartbeat round. `blocked`: bytes wait for room in the socket; `busy`: bytes wait to be
    /// written, or the stream is ending (no heartbeat goes in between).
    mutating func round(blocked: Bool, busy: Bool) -> Verdict {
        if blocked {
            if blockedRounds < .max { blockedRounds += 1 }
            return blockedRounds >= Self.blockedRoundsAllowed ? .stoppedReading : .nothing
        }
        defer { quiet = true }
        return quiet && !busy ? .heartbeat : .nothing
    }
}

/// Streams that end when their token expires, filed by the whole second they end in (counted from the
/// engine's start): ended by the first tick past that second, each once, however late the tick.
struct ExpiryWheel {
    /// The furthest an end is filed (seconds, about 10,000 years): a later one never comes.
    static let longestWait: Double = 316_000_000_000

    private var due: [Int64: [UInt64]] = [:]
    /// The last second whose streams were ended.
    private(set) var endedThrough: Int64 = 0

    /// Streams filed and not yet ended.
    var count: Int { due.values.reduce(0) { $0 + $1.count } }

    /// Files `token`, which has `secondsLeft` at `now` (any Double a token's `exp` can give: it is
    /// bounded before it becomes an integer), under the first whole second at or past its end: never
    /// ended early. (Filed by `now`'s whole second, a stream filed at 10.95 s with 1 s left ended at the
    /// tick of second 11, 0.05 s later: a `/changes?wait=1` answered at once.)
    /// Returns the second it is filed under.
    @discardableResult
    mutating func add(_ token: UInt64, secondsLeft: Double, at now: Duration) -> Int64 {
        let left = secondsLeft.isFinite ? min(max(secondsLeft, 0), Self.longestWait) : 0
        let fraction = Double(now.components.attoseconds) / 1e18
        let seconds = Int64((fraction + left).rounded(.up))
        let second = max(now.components.seconds + seconds, endedThrough + 1)
        due[second, default: []].append(token)
        return second
    }

    /// The streams whose second has come by `now`, in the order of their seconds; each is given once.
    mutating func take(through now: Int64) -> [UInt64] {
        guard now > endedThrough else { return [] }
        defer { endedThrough = now }
        guard !due.isEmpty else { return [] }
        if now - endedThrough > Int64(due.count) {
            // A long gap (or the first tick): go through what is filed, not through every second.
            let seconds = due.keys.filter { $0 <= now }.sorted()
            return seconds.flatMap { due.removeValue(forKey: $0) ?? [] }
        }
        return ((endedThrough + 1)...now).flatMap { due.removeValue(forKey: $0) ?? [] }
    }
}
