@testable import HeraldHTTP
import Testing

/// A stream's life (`StreamLife`), driven alone: no socket, no thread.
@Suite struct StreamLifeTests {
    @Test func aStreamIsAddedOpenedClosedGracefullyAndEndsOnce() {
        var life = StreamLife()
        #expect(!life.isLive, "added: a wake-up is ignored until it is registered")
        life.close(.graceful, reason: .shutdown)
        #expect(life.state == .added, "a stream not registered is not asked to end (its loop closes it with the inbox)")
        let (first, second) = (life.register(), life.register())
        #expect(first && !second, "registered once")
        #expect(life.isLive && life.state == .open)
        let openIdle = life.feedIdle()
        #expect(openIdle == .wait, "open and idle: it waits")
        life.close(.graceful, reason: .expired)
        #expect(life.closing == .graceful && life.reason == .expired && life.endsAtItsToken)
        let closingIdle = life.feedIdle()
        #expect(closingIdle == .writeLast(expired: true), "its token's end: the feed's expired bytes")
        #expect(life.isEnding && life.isLive)
        let endingIdle = life.feedIdle()
        #expect(endingIdle == .wait, "the last bytes are queued once")
        let (dropped, droppedAgain) = (life.drop(), life.drop())
        #expect(dropped && !droppedAgain, "a stream ends once")
        #expect(life.isClosed && !life.isLive && life.reason == nil)
    }

    /// The stronger asking holds, and the first reason known, unless the server stops.
    @Test func anAbortOutranksAGracefulEndAndTheFirstReasonIsKept() {
        var life = StreamLife()
        _ = life.register()
        life.close(.graceful, reason: nil)  // a held request's client half-closed
        life.close(.graceful, reason: .revoked)
        #expect(life.state == .closing(.graceful, .revoked), "the first reason known")
        life.close(.graceful, reason: .expired)
        #expect(life.reason == .revoked)
        life.close(.abort, reason: .clientLeft)
        #expect(life.state == .closing(.abort, .revoked))
        life.close(.graceful, reason: .shutdown, replacing: true)
        #expect(life.state == .closing(.abort, .shutdown), "still aborting; the server's stop says why")
        let abortIdle = life.feedIdle()
        #expect(abortIdle == .wait, "an abort writes nothing more")
    }

    @Test func whatTheLastBytesAreFollowsWhyTheStreamEnds() {
        for (reason, expired) in [(StreamSummary.End.expired, true), (.ended, true), (.revoked, true), (.shutdown, false), (nil, false)] {
            var life = StreamLife()
            _ = life.register()
            life.close(.graceful, reason: reason)
            let idle = life.feedIdle()
            #expect(idle == .writeLast(expired: expired), "\(String(describing: reason))")
        }
    }

    /// A feed that completes ends the stream with its own reason, or the one known before.
    @Test func aCompletedFeedEndsTheStream() {
        var life = StreamLife()
        _ = life.register()
        life.feedCompleted(.finished)
        #expect(life.state == .ending(.finished))
        var closing = StreamLife()
        _ = closing.register()
        closing.close(.graceful, reason: .shutdown)
        closing.feedCompleted(.finished)
        #expect(closing.state == .ending(.shutdown))
        // Its last bytes queued, a stream is only dropped sooner.
        closing.close(.graceful, reason: .expired)
        #expect(closing.state == .ending(.shutdown))
        closing.close(.abort, reason: .shutdown, replacing: true)
        #expect(closing.state == .closing(.abort, .shutdown))
    }

    @Test func aStreamThatCouldNotBeRegisteredIsClosed() {
        var life = StreamLife()
        let (dropped, registered) = (life.drop(), life.register())
        #expect(dropped && !registered && life.isClosed)
    }
}
