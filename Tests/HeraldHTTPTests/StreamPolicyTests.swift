@testable import HeraldHTTP
import Testing

/// The stream engine's policies, driven with times of the test's own: no socket, no sleep.
@Suite struct StreamPolicyTests {
    /// Rounds come every interval; the engine sleeps until the next, a second at most; after a stall a
    /// late round is one round, and the next is a whole interval later.
    @Test func heartbeatRoundsComeEveryIntervalAndNeverTwiceAfterAStall() {
        var schedule = HeartbeatSchedule(every: .seconds(15), from: .seconds(100))
        #expect(schedule.wait(at: .seconds(100)) == .seconds(1))
        #expect(schedule.wait(at: .milliseconds(114_700)) == .milliseconds(300))
        #expect(!schedule.take(at: .milliseconds(114_999)))
        #expect(schedule.take(at: .seconds(115)))
        #expect(!schedule.take(at: .seconds(115)), "one round per due time")
        #expect(schedule.due == .seconds(130))
        // Stalled for a minute: one round, and the next 15 s after it.
        #expect(schedule.take(at: .seconds(190)))
        #expect(!schedule.take(at: .seconds(191)))
        #expect(schedule.due == .seconds(190))
        #expect(schedule.wait(at: .seconds(190)) == .zero)
        #expect(schedule.take(at: .seconds(190)) && schedule.due == .seconds(205))
    }

    /// A stream that wrote gets no heartbeat that round; a quiet one gets one each round; one with bytes
    /// waiting for room is dropped at the second such round in a row, and room again starts the count over.
    @Test func quietStreamsGetHeartbeatsAndBlockedOnesAreDroppedAtTheSecondRound() {
        var liveness = Liveness()
        #expect(liveness.round(blocked: false, busy: false) == .heartbeat, "a new stream that wrote nothing")
        liveness.wrote()  // the heartbeat itself
        liveness.sentHeartbeat()
        #expect(liveness.round(blocked: false, busy: false) == .heartbeat, "an idle stream gets one every round")
        liveness.wrote()
        #expect(liveness.round(blocked: false, busy: false) == .nothing, "it wrote since the last round")
        #expect(liveness.round(blocked: false, busy: false) == .heartbeat)
        #expect(liveness.round(blocked: false, busy: true) == .nothing, "bytes waiting, or ending: no heartbeat in between")
        #expect(liveness.round(blocked: true, busy: true) == .nothing, "the first full round is forgiven")
        liveness.drained()
        #expect(liveness.round(blocked: true, busy: true) == .nothing, "room came back: the count starts over")
        #expect(liveness.round(blocked: true, busy: true) == .stoppedReading)
    }

    /// Each stream is ended once, by the first tick at or past the second its token ends in, however
    /// late the ticks come; any time a token can carry is filed without a trap.
    @Test func expiringStreamsEndOnceAtTheirSecond() {
        var wheel = ExpiryWheel()
        wheel.add(1, secondsLeft: 2.5, at: 10)  // second 13
        wheel.add(2, secondsLeft: 0, at: 10)  // already over: the next tick
        wheel.add(3, secondsLeft: -50, at: 10)
        wheel.add(4, secondsLeft: 40, at: 10)  // second 50
        for left in [Double.nan, .infinity, -.infinity, .greatestFiniteMagnitude, 1e300] { wheel.add(9, secondsLeft: left, at: 10) }
        #expect(wheel.count == 9)
        #expect(wheel.take(through: 10).sorted() == [2, 3, 9, 9, 9], "no time, or none left: the next tick")
        #expect(wheel.take(through: 12) == [])
        #expect(wheel.take(through: 13) == [1])
        #expect(wheel.take(through: 13) == [], "each once")
        #expect(wheel.take(through: 1_000) == [4], "a late tick ends what fell due meanwhile")
        wheel.add(5, secondsLeft: 1, at: 900)  // filed in the past of the last tick: the next one
        #expect(wheel.take(through: 1_001) == [5])
        #expect(wheel.count == 2, "the far ones stay: about 10,000 years")
    }
}
