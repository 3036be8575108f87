/// A stream's life, from added to closed, as one state machine on its loop's thread, in the manner of
/// Hummingbird's `HTTPConnectionStateHandler.StateMachine`: the engine tells it what happened (the
/// stream was registered, asked to end, its feed completed or went idle, it was dropped) and it
/// answers what the engine is to do. It holds no socket: `StreamLifeTests` drives it alone.
struct StreamLife: Equatable {
    enum State: Equatable {
        /// Added: not yet in its loop's epoll set. A wake-up is ignored (registering writes it anyway).
        case added
        /// Its feed's events go out.
        case open
        /// Asked to end (the server stops, its token's end came, its held request's client
        /// half-closed): `.graceful` writes what is queued, then the feed's last bytes and the body's
        /// end; `.abort` drops it at its next write. With why, when it is known.
        case closing(EventStream.Closing, StreamSummary.End?)
        /// The feed is closed and the body's last bytes are queued: the socket closes once they are out.
        case ending(StreamSummary.End?)
        /// Gone: its socket is closed and its loop let go of it.
        case closed
    }

    private(set) var state = State.added

    /// In its loop's epoll set and not yet gone: written when woken.
    var isLive: Bool {
        switch state {
        case .added, .closed: false
        case .open, .closing, .ending: true
        }
    }

    var isClosed: Bool { state == .closed }

    /// The body's last bytes are queued.
    var isEnding: Bool { if case .ending = state { true } else { false } }

    /// Asked to end: how, if it was.
    var closing: EventStream.Closing? { if case .closing(let how, _) = state { how } else { nil } }

    /// Why it ends, once that is known.
    var reason: StreamSummary.End? {
        switch state {
        case .closing(_, let reason), .ending(let reason): reason
        case .added, .open, .closed: nil
        }
    }

    /// It ends at its token's end: a renewal can no longer move that end.
    var endsAtItsToken: Bool { reason == .expired }

    /// It was registered on its loop: false if it was not waiting for that (then it stays as it is).
    mutating func register() -> Bool {
        guard state == .added else { return false }
        state = .open
        return true
    }

    /// It is asked to end `how`, for `reason`. The stronger of two askings holds (an abort after a
    /// graceful end drops it); the first reason known is kept, unless `replacing` (the server stops:
    /// every stream's end says so). A stream whose last bytes are queued only ends sooner, when it is
    /// aborted; one that is gone stays gone.
    mutating func close(_ how: EventStream.Closing, reason: StreamSummary.End?, replacing: Bool = false) {
        switch state {
        case .added, .closed:
            return
        case .open:
            state = .closing(how, reason)
        case .closing(let asked, let known):
            state = .closing(max(asked, how), replacing ? reason : known ?? reason)
        case .ending(let known):
            if how == .abort { state = .closing(.abort, replacing ? reason : known ?? reason) }
        }
    }

    /// What the engine does with a stream whose feed has nothing more for now.
    enum Idle: Equatable {
        /// Wait for the feed's next wake-up.
        case wait
        /// Queue the feed's last bytes (`expired`: the ones for a deadline that came, the token's or an
        /// administrator's) and the body's end, then close.
        case writeLast(expired: Bool)
    }

    /// The feed is idle: a stream asked to end gracefully now writes its last bytes.
    mutating func feedIdle() -> Idle {
        guard case .closing(.graceful, let reason) = state else { return .wait }
        state = .ending(reason)
        return .writeLast(expired: [.expired, .ended, .revoked].contains(reason))
    }

    /// The feed's last take was its last (`FeedPoll.complete`), for `feedReason` if it says.
    mutating func feedCompleted(_ feedReason: StreamSummary.End?) {
        switch state {
        case .added, .closed, .ending: return
        case .open: state = .ending(feedReason)
        case .closing(_, let known): state = .ending(known ?? feedReason)
        }
    }

    /// It is dropped, or its last bytes are out: false when it was gone already (a stream ends once).
    mutating func drop() -> Bool {
        guard state != .closed else { return false }
        state = .closed
        return true
    }
}
