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
    /// The stream's token: its id, subject, topics and end, which a renewal moves.
    private let lease: StreamLease?
    private let leases: StreamLeases?
    /// Events taken (position markers are not events); the stream engine's thread only.
    private(set) var eventsTaken = 0
    /// The lease's events still to send first: `stream` at the start, `token-expiring` when warned.
    /// The stream engine's thread only.
    private var notices: [UInt8] = []

    /// Closed once when the stream is gone: presence counts it out.
    private let presence: Presence.Ticket?
    // The small ones last, together (Swift lays out a class's stored properties in the order written):
    // 102 bytes, which malloc keeps in 112 (113 and 128 when they were among the others).
    /// Pieces of a packed replay still to pass over: their frames went with the first piece's file.
    private var skipping: Int32 = 0
    private(set) var overflowed = false
    /// Its first events are all taken: they never come back, so the subscription's lock is not asked
    /// again (the engine asks before every take; measured at 3 % of its time with 1,000 streams).
    private var caughtUp = false

    /// - Parameter lease: the stream's token, which `leases` keeps while the stream is open (nil: a
    ///   stream without token, which never has to end).
    init(_ subscription: Subscription, localizer: TripLocalizer? = nil, lease: StreamLease? = nil, leases: StreamLeases? = nil,
         presence: Presence.Ticket? = nil) {
        self.presence = presence
        self.subscription = subscription
        self.localizer = localizer
        self.lease = lease
        self.leases = leases
        if let lease { notices = lease.message("stream") }
    }

    var expires: Date? { lease?.expires }
    var renewable: Bool { lease != nil }

    func warnExpiring() -> Bool {
        guard let lease else { return false }
        notices += lease.message("token-expiring")
        return true
    }

    func expired(into out: inout [UInt8]) {
        guard let lease else { return }
        out += lease.isEnded ? lease.endedMessage : lease.message("expired")
    }

    /// An administrator ended it, or revoked its token: its end is that, not `token expired`.
    var ending: StreamSummary.End? {
        switch lease?.ending {
        case .ended: .ended
        case .revoked: .revoked
        case nil: nil
        }
    }

    func take(into out: inout [UInt8], limit: Int) -> FeedPoll {
        var none: FileRegion?
        return take(into: &out, limit: limit, file: &none, sendsFiles: false)
    }

    func take(into out: inout [UInt8], limit: Int, file: inout FileRegion?) -> FeedPoll {
        take(into: &out, limit: limit, file: &file, sendsFiles: true)
    }

    /// `sendsFiles`: a packed replay's first piece that has a file (`Event.replayFile`) ends the take as
    /// that file, and its other pieces are passed over.
    private func take(into out: inout [UInt8], limit: Int, file: inout FileRegion?, sendsFiles: Bool) -> FeedPoll {
        let noticed = !notices.isEmpty
        if noticed {
            out += notices
            notices = []
        }
        var taken = 0
        let poll = subscription.drain { event in
            if skipping > 0 {
                skipping -= 1
                taken += event.carried
                return skipping > 0
            }
            if sendsFiles, let replay = event.replayFile {
                // Nothing may follow the file in this take: its bytes go after `out`'s.
                file = FileRegion(descriptor: replay.descriptor, count: replay.count, owner: replay)
                taken += event.carried
                skipping = Int32(clamping: replay.pieces - 1)
                return skipping > 0
            }
            if event.name != .position { taken += event.carried }
            if let localizer, let frame = localizer.frame(for: event) { out.append(contentsOf: frame) } else { out.append(contentsOf: event.frame) }
            return out.count < limit
        }
        eventsTaken += taken
        switch poll {
        case .taken: return .taken
        // A notice taken with nothing else is still something to write; the next take finds it idle.
        case .idle: return noticed ? .taken : .idle
        case .ended(let end):
            overflowed = end == .overflowed
            return .finished
        }
    }

    var shareKey: UInt64? { subscription.observerID }

    func setWaker(_ waker: @escaping @Sendable (_ finished: Bool) -> Void) {
        lease?.setWaker(waker)
        subscription.setWaker(waker)
    }

    func close() {
        if let lease { leases?.close(lease) }
        subscription.cancel()
        presence?.close()
    }

    var catchingUp: Bool {
        guard !caughtUp else { return false }
        caughtUp = !subscription.catchingUp
        return !caughtUp
    }
}
