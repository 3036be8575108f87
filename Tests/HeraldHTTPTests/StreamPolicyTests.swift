@testable import HeraldHTTP
import Testing

/// The stream engine's policies, driven with times of the test's own: no socket, no sleep. (Each
/// mutating call is made before its `#expect`, whose expansion may not mutate.)
@Suite struct StreamPolicyTests {
    /// Rounds come every interval; the engine sleeps until the next, a second at most; after a stall a
    /// late round is one round, and the next is a whole interval later.
    @Test func heartbeatRoundsComeEveryIntervalAndNeverTwiceAfterAStall() {
        var schedule = HeartbeatSchedule(every: .seconds(15), from: .seconds(100))
        #expect(schedule.wait(at: .seconds(100)) == .seconds(1))
        #expect(schedule.wait(at: .milliseconds(114_700)) == .milliseconds(300))
        let rounds = [.milliseconds(114_999), .seconds(115), .seconds(115)].map { schedule.take(at: $0) }
        #expect(rounds == [false, true, false], "due at 115 s, once")
        #expect(schedule.due == .seconds(130))
        // Stalled for a minute: one round, and the next 15 s after it.
        let late = [.seconds(190), .seconds(191), .milliseconds(204_999), .seconds(205)].map { schedule.take(at: $0) }
        #expect(late == [true, false, false, true])
        #expect(schedule.due == .seconds(220) && schedule.wait(at: .seconds(219)) == .seconds(1))
    }

    /// A stream that wrote gets no heartbeat that round; a quiet one gets one each round; one with bytes
    /// waiting for room is dropped at the second such round in a row, and room again starts the count over.
    @Test func quietStreamsGetHeartbeatsAndBlockedOnesAreDroppedAtTheSecondRound() {
        var liveness = Liveness()
        var verdicts: [Liveness.Verdict] = []
        verdicts.append(liveness.round(blocked: false, busy: false))  // a new stream that wrote nothing
        liveness.wrote()  // the heartbeat itself
        liveness.sentHeartbeat()
        verdicts.append(liveness.round(blocked: false, busy: false))  // idle: one every round
        liveness.wrote()
        verdicts.append(liveness.round(blocked: false, busy: false))  // it wrote since the last round
        verdicts.append(liveness.round(blocked: false, busy: false))
        verdicts.append(liveness.round(blocked: false, busy: true))  // bytes waiting, or ending: none in between
        verdicts.append(liveness.round(blocked: true, busy: true))  // the first full round is forgiven
        liveness.drained()
        verdicts.append(liveness.round(blocked: true, busy: true))  // room came back: the count starts over
        verdicts.append(liveness.round(blocked: true, busy: true))
        #expect(verdicts == [.heartbeat, .heartbeat, .nothing, .heartbeat, .nothing, .nothing, .nothing, .stoppedReading])
    }

    /// Each stream is ended once, by the first tick at or past the second its token ends in, however
    /// late the ticks come; any time a token can carry is filed without a trap.
    @Test func expiringStreamsEndOnceAtTheirSecond() {
        var wheel = ExpiryWheel()
        wheel.add(1, secondsLeft: 2.5, at: .seconds(10))  // second 13
        wheel.add(2, secondsLeft: 0, at: .seconds(10))  // already over: the next tick
        wheel.add(3, secondsLeft: -50, at: .seconds(10))
        wheel.add(4, secondsLeft: 40, at: .seconds(10))  // second 50
        for left in [Double.nan, .infinity, -.infinity, .greatestFiniteMagnitude, 1e300] { wheel.add(9, secondsLeft: left, at: .seconds(10)) }
        #expect(wheel.count == 9)
        let ticks = [10, 12, 13, 13, 1_000].map { wheel.take(through: $0).sorted() }
        #expect(ticks == [[2, 3, 9, 9, 9], [], [1], [], [4]], "no time or none left: the next tick; each once; a late tick takes what fell due")
        wheel.add(5, secondsLeft: 1, at: .seconds(900))  // filed in the past of the last tick: the next one
        let filedLate = wheel.take(through: 1_001)
        #expect(filedLate == [5])
        #expect(wheel.count == 2, "the far ones stay: about 10,000 years")
        wheel.add(6, secondsLeft: 1, at: .seconds(1_001) + .milliseconds(950))  // ends at 1,002.95 s
        #expect(wheel.take(through: 1_002).isEmpty, "not at the tick of second 1,002, before its end")
        #expect(wheel.take(through: 1_003) == [6])
    }
}
