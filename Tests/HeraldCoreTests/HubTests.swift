import HeraldThreads
import Dispatch
import Foundation
@testable import HeraldCore
import HeraldJSON
import Synchronization
import Testing

@Suite struct HubTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    func text(_ event: Event) -> String { String(decoding: event.data, as: UTF8.self) }

    /// The events a subscription has queued, without the position marker a stream starts with.
    func drain(_ subscription: Subscription) -> [Event] {
        if case .events(let events) = subscription.poll() { return events.filter { $0.name != EventName.position } }
        return []
    }

    @Test func aNewObserverGetsTheCurrentValueThenLiveEventsInOrder() {
        let hub = Hub()
        hub.set([Hub.Update(topic: "currency", value: bytes("v0"))])
        hub.publish(topic: "currency", name: "currency", updates: [Hub.Update(topic: "currency", value: bytes("v1"))], data: bytes("e1"))
        let subscription = hub.subscribe(to: ["currency"], resume: .now(snapshot: true))
        hub.publish(topic: "currency", name: "currency", updates: [Hub.Update(topic: "currency", value: bytes("v2"))], data: bytes("e2"))
        let events = drain(subscription)
        #expect(events.map(\.name) == ["snapshot", "currency"])
        #expect(events.map(text) == ["v1", "e2"])
        #expect(events.map(\.id) == [1, 2], "the snapshot carries the sequence it reflects")
    }

    /// The delivery signal is called at every publish that finds no event waiting. A closure read out
    /// of a `Lock` at each call is wrapped in one more thunk per read (see `Lock`): publish n would
    /// run n nested thunks, and a long-running server would finally overflow its stack. 30,000
    /// publishes on a 256 KiB stack crash that way; each publish calls the signal directly.
    @Test func theDeliverySignalCostsNoMoreAtTheLastPublishThanAtTheFirst() throws {
        let signals = Lock(0)
        let hub = Hub(signal: { signals.withLock { $0 += 1 } })
        let subscription = hub.subscribe(to: ["a"], resume: .now(snapshot: false))
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            for index in 1...30_000 {
                hub.publish(topic: "a", name: "e", data: [UInt8(index & 0x7F)])
                if index.isMultiple(of: 1_000) { hub.deliver() }
            }
            finished.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        #expect(finished.wait(timeout: .now() + 60) == .success)
        hub.deliver()
        #expect(signals.withLock { $0 } > 0, "the signal was called, so it was read at every publish")
        _ = subscription
    }

    /// The stream engine's loops fan one batch out together, each to its own share of the observers
    /// (their ids modulo the number of shares): every observer gets every event once and in order, from
    /// its share alone, and a share queues nothing to another's observers.
    @Test func aBatchDeliveredInSharesReachesEveryObserverOnceAndInOrder() throws {
        let hub = Hub(signal: {})
        let subscriptions = (0..<10).map { _ in hub.subscribe(to: ["a"], resume: .now(snapshot: false)) }
        for index in 1...5 { hub.publish(topic: "a", name: "e", data: bytes("\(index)")) }
        let all = ["1", "2", "3", "4", "5"]
        let batch = try #require(hub.deliveries())
        #expect(hub.deliveries() == nil, "a batch is taken once")
        hub.deliver(batch, share: 1, of: 3)
        let first = subscriptions.map { drain($0).map(text) }
        #expect(first.allSatisfy { $0 == all || $0.isEmpty }, "\(first)")
        #expect((3...4).contains(first.count { $0 == all }), "one share is a third of ten observers: \(first)")
        hub.deliver(batch, share: 0, of: 3)
        hub.deliver(batch, share: 2, of: 3)
        let rest = subscriptions.map { drain($0).map(text) }
        for (before, after) in zip(first, rest) {
            #expect(before.isEmpty != after.isEmpty && before + after == all, "from one share only: \(before) then \(after)")
        }
        hub.publish(topic: "a", name: "e", data: bytes("6"))
        let next = try #require(hub.deliveries())
        for share in [2, 0, 1] { hub.deliver(next, share: share, of: 3) }
        #expect(subscriptions.map { drain($0).map(text) } == Array(repeating: ["6"], count: 10))
    }

    /// A batch that no observer watches is no work: the engine's first loop hands nothing to the others,
    /// which a countdown's ticks with no watcher woke every second.
    @Test func aBatchNobodyWatchesIsNoWorkForTheLoops() throws {
        let hub = Hub(signal: {})
        hub.publish(topic: "auctions/1", name: "tick", data: bytes("1"))
        #expect(hub.deliveries() == nil, "nobody watches auctions/1")
        let subscription = hub.subscribe(to: ["auctions/1"], resume: .now(snapshot: false))
        hub.publish(topic: "auctions/1", name: "tick", data: bytes("2"))
        let batch = try #require(hub.deliveries(), "now somebody does")
        hub.deliver(batch)
        #expect(drain(subscription).map(text) == ["2"], "and gets only what was published after it came")
    }

    /// A loop that fans a batch out to 1,000 lobby observers queues for over a millisecond; it lets its
    /// core go in between (`StreamEngine.pause`), so the batch calls back every 32 observers, with the
    /// observers before it queued to and no lock held: a publish from another thread goes through.
    @Test func aLargeBatchPausesEvery32ObserversWithNoLockHeld() throws {
        let hub = Hub(signal: {})
        let subscriptions = (0..<100).map { _ in hub.subscribe(to: ["a"], resume: .now(snapshot: false)) }
        hub.publish(topic: "a", name: "e", data: bytes("1"))
        hub.publish(topic: "a", name: "e", data: bytes("2"))
        let batch = try #require(hub.deliveries())
        var queuedAtEachPause: [Int] = []
        var publishedDuringPause = false
        hub.deliver(batch) {
            queuedAtEachPause.append(subscriptions.reduce(0) { $0 + drain($1).count })
            if queuedAtEachPause.count == 1 {
                let published = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    hub.publish(topic: "b", name: "e", data: [1])
                    published.signal()
                }
                publishedDuringPause = published.wait(timeout: .now() + 10) == .success
            }
        }
        let rest = subscriptions.reduce(0) { $0 + drain($1).count }
        #expect(queuedAtEachPause == [32, 32, 32, 32, 32, 32], "two events to 100 observers: 200 queued, a pause after each 32")
        #expect(rest == 8)
        #expect(publishedDuringPause, "the hub's lock is free during a pause")
    }

    @Test func observersOfOneSubjectSeeNothingOfAnother() {
        let hub = Hub()
        let seven = hub.subscribe(to: ["units/7"], resume: .now(snapshot: false))
        hub.declareCollection("units", arrayName: "units", itemName: "unit")
        let all = hub.subscribe(to: ["units"], resume: .now(snapshot: false))
        hub.publish(topic: "units/7", name: "unit", tags: ["is:status=ok"], data: bytes("7"))
        hub.publish(topic: "units/8", name: "unit", tags: ["is:status=ok"], data: bytes("8"))
        hub.publish(topic: "units7", name: "unit", tags: ["is:status=ok"], data: bytes("not below units"))
        #expect(drain(seven).map(text) == ["7"])
        #expect(drain(all).map(text) == ["7", "8"])
    }

    @Test func replayAfterALastEventIdIsExact() {
        let hub = Hub(historyLimit: 100)
        for index in 1...10 { hub.publish(topic: index.isMultiple(of: 2) ? "a" : "b", name: "e", data: bytes("\(index)")) }
        let subscription = hub.subscribe(to: ["a"], resume: .after(4))
        hub.publish(topic: "a", name: "e", data: bytes("11"))
        #expect(drain(subscription).map(\.id) == [6, 8, 10, 11])
    }

    /// A topic added to a resumed stream (a browser's shared stream taking another tab's topics)
    /// starts with its snapshot as of now; the other topics replay exactly; a topic without state
    /// (a notification) replays even when added.
    @Test func anAddedTopicStartsWithItsSnapshotWhileTheOthersReplay() {
        let hub = Hub(historyLimit: 100)
        for index in 1...6 {
            let topic = index.isMultiple(of: 2) ? "a" : "b"
            hub.publish(topic: topic, name: "e", updates: [Hub.Update(topic: topic, value: bytes("\(topic)\(index)"))], data: bytes("\(index)"))
        }
        hub.publish(topic: "notifications/n", name: "notification", data: bytes("n7"))
        let subscription = hub.subscribe(to: ["a", "b", "notifications/n"], resume: .after(2), added: ["b", "notifications/n"])
        let events = drain(subscription)
        #expect(events.map { "\($0.name.text):\(text($0))" } == ["e:4", "e:6", "notification:n7", "snapshot:b5"])
        #expect(events.last?.id == 7, "the snapshot stands at the last id")
        let plain = hub.subscribe(to: ["a", "b"], resume: .after(2))
        #expect(drain(plain).map(text) == ["3", "4", "5", "6"], "without added, every topic replays")
    }

    @Test func transientEventsAreDeliveredButNeitherNumberedNorKept() {
        let hub = Hub(historyLimit: 100)
        hub.publish(topic: "a", name: "bid", data: bytes("1"))
        let live = hub.subscribe(to: ["a"], resume: .after(1))
        hub.publish(durable: false, topic: "a", name: "tick", updates: [Hub.Update(topic: "a", value: bytes("t1"))], data: bytes("t1"))
        hub.publish(durable: false, topic: "a", name: "tick", updates: [Hub.Update(topic: "a", value: bytes("t2"))], data: bytes("t2"))
        #expect(hub.lastEventId == 1, "a tick takes no sequence number")
        let joined = hub.subscribe(to: ["a"], resume: .now(snapshot: true))
        hub.publish(durable: false, topic: "a", name: "tick", data: bytes("t3"))
        hub.publish(topic: "a", name: "bid", data: bytes("2"))
        let seen = drain(live)
        #expect(seen.map(\.name) == ["tick", "tick", "tick", "bid"], "two ticks at the same id are two events")
        #expect(seen.map(\.id) == [1, 1, 1, 2])
        #expect(drain(joined).map { String(decoding: $0.data, as: UTF8.self) } == ["t2", "t3", "2"],
                "the snapshot holds the last tick's value; a tick before joining is not queued again")
        #expect(drain(hub.subscribe(to: ["a"], resume: .after(0))).map(\.name) == ["bid", "bid"], "replay has no ticks")
    }

    @Test func anIdOlderThanTheHistoryOrUnknownGetsResyncAndSnapshot() {
        let hub = Hub(historyLimit: 3)
        hub.set([Hub.Update(topic: "a", value: bytes("state"))])
        for index in 1...10 { hub.publish(topic: "a", name: "e", data: bytes("\(index)")) }
        for resume in [ResumePoint.after(2), .unknown, .after(99)] {
            let events = drain(hub.subscribe(to: ["a"], resume: resume))
            #expect(events.map(\.name) == ["resync", "snapshot"], "\(resume)")
            #expect(events.allSatisfy { $0.id == 10 })
        }
        #expect(drain(hub.subscribe(to: ["a"], resume: .after(7))).map(\.id) == [8, 9, 10], "the oldest kept boundary replays")
    }

    /// The history is bounded by bytes as well as by count (never-down part three: one client's 60 KB
    /// notifications took 1.2 GiB): 12,000 of them leave it within its bound, a resume from before what
    /// is kept gets `resync`, and one from within it replays exactly.
    @Test func theHistoryIsBoundedByBytesAndAResumeFromBeforeItIsAResync() {
        let bound = 8 << 20
        let hub = Hub(historyLimit: 100_000, historyByteLimit: bound) { _, _, data in data }
        hub.set([Hub.Update(topic: "notifications/flood", value: bytes("state"))])
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: 60_000)
        for _ in 1...12_000 { hub.publish(topic: "notifications/flood", name: "notification", data: payload) }
        #expect(hub.historyByteCount <= bound, "\(hub.historyByteCount) bytes kept")
        #expect(hub.historyByteCount > bound - 2 * Hub.historySize(of: hub.publish(topic: "x", name: "e", data: payload)))
        let kept = hub.historyCount
        #expect(kept < 12_000 && kept >= bound / (2 * 60_000 + 200), "\(kept) kept")
        let oldest = hub.oldestEventId ?? 0
        let before = drain(hub.subscribe(to: ["notifications/flood"], resume: .after(oldest - 2)))
        #expect(before.map(\.name) == ["resync", "snapshot"])
        let within = drain(hub.subscribe(to: ["notifications/flood"], resume: .after(hub.lastEventId - 3)))
        #expect(within.map(\.name) == ["notification", "notification"], "the last three, less the one on another topic")
        // A single event larger than the bound is still kept: it is the newest.
        let small = Hub(historyLimit: 10, historyByteLimit: 1000)
        small.publish(topic: "a", name: "e", data: payload)
        #expect(small.historyCount == 1)
        small.publish(topic: "a", name: "e", data: bytes("1"))
        #expect(small.historyCount == 1, "the big one went first")
    }

    @Test func filtersApplyToLiveAndReplayedEvents() {
        let hub = Hub()
        hub.publish(topic: "t", name: "trip", tags: ["actualDeparture"], data: bytes("1"))
        hub.publish(topic: "t", name: "trip", tags: ["actualDeparture", "delay"], data: bytes("2"))
        let subscription = hub.subscribe(to: ["t"], resume: .after(0)) { $0.tags.contains("delay") }
        hub.publish(topic: "t", name: "trip", tags: ["delayed"], data: bytes("3"))
        hub.publish(topic: "t", name: "trip", tags: ["delay"], data: bytes("4"))
        #expect(drain(subscription).map(text) == ["2", "4"])
    }

    @Test func aFullQueueEndsOnlyThatObserver() {
        let hub = Hub()
        let slow = hub.subscribe(to: ["a"], resume: .now(snapshot: false), queueLimit: 2)
        let fast = hub.subscribe(to: ["a"], resume: .now(snapshot: false), queueLimit: 100)
        for index in 1...3 { hub.publish(topic: "a", name: "e", data: bytes("\(index)")) }
        guard case .ended(.overflowed) = slow.poll() else {
            Issue.record("the slow observer must be ended")
            return
        }
        #expect(drain(fast).count == 3)
    }

    @Test func theWakerIsCalledOnceAfterAnIdlePoll() {
        let hub = Hub()
        let subscription = hub.subscribe(to: ["a"], resume: .now(snapshot: false))
        let counter = Counter()
        subscription.setWaker { _ in counter.increment() }
        hub.publish(topic: "a", name: "e", data: bytes("1"))
        #expect(counter.value == 0, "not idle yet: no wake needed")
        _ = drain(subscription)
        guard case .idle = subscription.poll() else {
            Issue.record("expected idle")
            return
        }
        hub.publish(topic: "a", name: "e", data: bytes("2"))
        hub.publish(topic: "a", name: "e", data: bytes("3"))
        #expect(counter.value == 1)
    }

    @Test func cancellingOrDroppingASubscriptionRemovesTheObserver() {
        let hub = Hub()
        let subscription = hub.subscribe(to: ["a", "b"], resume: .now(snapshot: false))
        #expect(hub.observerCount == 1)
        #expect(hub.subjects.map(\.observers) == [1, 1])
        subscription.cancel()
        subscription.cancel()
        #expect(hub.observerCount == 0)
        do { _ = hub.subscribe(to: ["a"], resume: .now(snapshot: false)) }
        #expect(hub.observerCount == 0)
    }

    @Test func aCollectionSnapshotJoinsItsMembersInKeyOrder() {
        let hub = Hub()
        hub.declareCollection("units", arrayName: "units", itemName: "unit")
        #expect(hub.value(of: "units").map { String(decoding: $0, as: UTF8.self) } == #"{"topic":"units","units":[]}"#)
        hub.publish(topic: "units/b", name: "unit", updates: [.member(of: "units", key: "b", value: bytes(#"{"id":"b"}"#))], data: bytes("1"))
        hub.publish(topic: "units/a", name: "unit", updates: [.member(of: "units", key: "a", value: bytes(#"{"id":"a"}"#))], data: bytes("2"))
        let first = drain(hub.subscribe(to: ["units"], resume: .now(snapshot: true)))
        #expect(first.map(text) == [#"{"topic":"units","units":[{"id":"a"},{"id":"b"}]}"#])
        hub.publish(topic: "units/a", name: "removed", updates: [.member(of: "units", key: "a", value: nil)], data: bytes("3"))
        let second = drain(hub.subscribe(to: ["units"], resume: .now(snapshot: true)))
        #expect(second.map(text) == [#"{"topic":"units","units":[{"id":"b"}]}"#])
        #expect(second.first?.id == 3)
    }

    @Test func aLobbyItemThatIsItsChangeByteForByteSharesItsFrame() {
        let hub = Hub(encoder: { id, name, data in Array("id: \(id ?? 0)\nevent: \(name.text)\n".utf8) + data })
        hub.declareCollection("units", arrayName: "units", itemName: "unit")
        let lobby = hub.subscribe(to: ["units"], resume: .now(snapshot: false)), one = hub.subscribe(to: ["units/a"], resume: .now(snapshot: false))
        _ = (drain(lobby), drain(one))
        hub.publish(topic: "units/a", name: "unit", tags: Membership.tags(before: nil, after: [FilterValue(field: "status", value: "ok")]),
                    updates: [.member(of: "units", key: "a", value: bytes(#"{"id":"a"}"#), values: [FilterValue(field: "status", value: "ok")])], data: bytes(#"{"n":1}"#))
        let (item, change) = (drain(lobby), drain(one))
        #expect(item.count == 1 && change.count == 1)
        guard let item = item.first, let change = change.first else { return }
        #expect(!item.frame.isEmpty && item.frame == change.frame)
        #expect(item.frame.withUnsafeBufferPointer { $0.baseAddress } == change.frame.withUnsafeBufferPointer { $0.baseAddress },
                "one frame, encoded once and kept once")
    }

    /// A member's change as the journal publishes it: tagged with its filter values before and after.
    private func change(_ hub: Hub, _ id: String, from before: String?, to after: String?) {
        let entry = after.map { bytes(#"{"id":"\#(id)","status":"\#($0)"}"#) }
        hub.publish(topic: "auctions/\(id)", name: "bid", tags: Membership.tags(before: before.map { [FilterValue(field: "status", value: $0)] }, after: after.map { [FilterValue(field: "status", value: $0)] }),
                    updates: [.member(of: "auctions", key: id, value: entry, values: after.map { [FilterValue(field: "status", value: $0)] } ?? [])],
                    data: bytes(#"{"topic":"auctions/\#(id)","n":\#(hub.lastEventId + 1)}"#))
    }

    @Test func aFilteredCollectionGetsEntersChangesAndLeavesLiveAndInAReplay() {
        let hub = Hub()
        hub.declareCollection("auctions", arrayName: "auctions", itemName: "auction")
        change(hub, "10", from: nil, to: "open")
        change(hub, "9", from: nil, to: "open")
        change(hub, "8", from: nil, to: "open")
        change(hub, "8", from: "open", to: "closed")
        let open = hub.subscribe(to: ["auctions"], collections: ["auctions": CollectionFilter(["status": ["open"]])], resume: .now(snapshot: true))
        let snapshot = drain(open)
        #expect(snapshot.map(text) == [#"{"topic":"auctions","auctions":[{"id":"9","status":"open"},{"id":"10","status":"open"}]}"#],
                "9 before 10: ids in order by value; 8 is closed")
        let every = hub.subscribe(to: ["auctions"], resume: .now(snapshot: false))
        _ = drain(every)
        change(hub, "9", from: "open", to: "open")     // 5: a change while it passes
        change(hub, "10", from: "open", to: "closed")  // 6: leaves
        change(hub, "11", from: nil, to: "open")       // 7: enters
        change(hub, "8", from: "closed", to: "closed") // 8: passes neither before nor after
        let live = drain(open)
        #expect(live.map { "\($0.id) \($0.name)" } == ["5 auction", "6 left", "7 auction"])
        #expect(live.map(text)[1] == #"{"topic":"auctions/10","id":"10"}"#)
        #expect(drain(every).map { "\($0.id) \($0.name)" } == ["5 auction", "6 auction", "7 auction", "8 auction"],
                "no filter: every change, and no leave, as nothing left")
        let replay = drain(hub.subscribe(to: ["auctions"], collections: ["auctions": CollectionFilter(["status": ["open"]])],
                                         resume: .after(4)))
        #expect(replay.map { "\($0.id) \($0.name)" } == ["5 auction", "6 left", "7 auction"], "a replay gives what the live stream gave")
        let closed = drain(hub.subscribe(to: ["auctions"], collections: ["auctions": CollectionFilter(["status": ["closed"]])], resume: .after(3)))
        #expect(closed.map { "\($0.id) \($0.name)" } == ["4 auction", "6 auction", "8 auction"])
    }

    @Test func aCollectionsObserversGetItsMembersChangesAndNotTheirTicksEvenInOneBatch() {
        let hub = Hub(signal: {})
        hub.declareCollection("auctions", arrayName: "auctions", itemName: "auction")
        let lobby = hub.subscribe(to: ["auctions"], resume: .now(snapshot: false))
        let one = hub.subscribe(to: ["auctions/1"], resume: .now(snapshot: false))
        _ = drain(lobby)
        _ = drain(one)
        hub.publish(durable: false, topic: "auctions/1", name: "tick", data: bytes("t1"))
        change(hub, "1", from: nil, to: "open")
        hub.publish(durable: false, topic: "auctions/1", name: "tick", data: bytes("t2"))
        hub.deliver()  // one batch: a tick first, then a change, on the same topic
        #expect(drain(lobby).map(\.name.text) == ["auction"])
        #expect(drain(one).map(\.name.text) == ["tick", "bid", "tick"])
        hub.publish(durable: false, topic: "auctions/1", name: "tick", data: bytes("t3"))
        hub.deliver()
        #expect(drain(one).map(\.name.text) == ["tick"])
        #expect(drain(lobby).isEmpty)
    }

    @Test func aLargeCollectionsSnapshotIsFramedAsSeveralEventsSharedByItsObservers() {
        let hub = Hub()
        hub.declareCollection("auctions", arrayName: "auctions", itemName: "auction")
        for id in 1...2_000 { change(hub, String(id), from: nil, to: "open") }
        let first = drain(hub.subscribe(to: ["auctions"], resume: .now(snapshot: true)))
        let second = drain(hub.subscribe(to: ["auctions"], resume: .now(snapshot: true)))
        #expect(first.count > 1)
        #expect(first.allSatisfy { $0.data.count <= 8 * 1024 + 64 })
        #expect(zip(first, second).allSatisfy { $0 === $1 }, "observers that arrive between two changes share the snapshot")
        var ids: [Int] = []
        for (index, event) in first.enumerated() {
            let json = (try? JSONSerialization.jsonObject(with: Data(event.data))) as? [String: Any]
            #expect((json?["more"] as? Bool ?? false) == (index < first.count - 1), "every event but the last says more")
            ids += (json?["auctions"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? String).flatMap { Int($0) } }
        }
        #expect(ids == Array(1...2_000))
        change(hub, "5", from: "open", to: "closed")
        let third = drain(hub.subscribe(to: ["auctions"], resume: .now(snapshot: true)))
        #expect(third.first !== first.first, "a change makes the next snapshot anew")
    }

    @Test func aSubjectObservedTwiceThroughParentAndChildGetsEachEventOnce() {
        let hub = Hub()
        let subscription = hub.subscribe(to: ["units", "units/1"], resume: .now(snapshot: false))
        hub.publish(topic: "units/1", name: "unit", data: bytes("x"))
        #expect(drain(subscription).count == 1)
    }
}

final class Counter: Sendable {
    private let count = Lock(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

import Synchronization

@Suite struct HubLifecycleTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aStreamWithNothingToSendStartsAtAPosition() {
        let hub = Hub()
        hub.publish(topic: "notifications/a", name: "notification", data: bytes("x"))
        let subscription = hub.subscribe(to: ["notifications/door"], resume: .now(snapshot: true))
        guard case .events(let events) = subscription.poll() else { Issue.record("no position"); return }
        #expect(events.map(\.name) == [EventName.position])
        #expect(events.first?.id == 1, "the position is the sequence when the stream began")
        // A replay with nothing missed starts at a position too: the stream's first block is an event.
        let replaying = hub.subscribe(to: ["notifications/door"], resume: .after(1))
        guard case .events(let replayed) = replaying.poll() else { Issue.record("no position after a replay of nothing"); return }
        #expect(replayed.map(\.name) == [EventName.position] && replayed.first?.id == 1)
    }

    @Test func subjectsWithNoValueAndNoObserversAreFreed() {
        let hub = Hub()
        let before = hub.heldSubjectCount
        for index in 0..<1000 {
            let subscription = hub.subscribe(to: ["notifications/n\(index)"], resume: .now(snapshot: false))
            hub.publish(topic: "notifications/n\(index)", name: "notification", data: bytes("x"))
            subscription.cancel()
        }
        #expect(hub.heldSubjectCount == before)
    }

    /// A value kept only while observed (presence) is set only on an observed subject, and goes with
    /// the subject's last observer: made-up topics cost nothing once their observers leave.
    @Test func valuesKeptWhileObservedGoWithTheLastObserver() {
        let hub = Hub()
        let before = hub.heldSubjectCount
        for index in 0..<100 {
            let topic = "presence/notifications/n\(index)"
            hub.setWhileObserved(topic) { bytes("unobserved") }
            #expect(hub.value(of: topic) == nil, "nobody observes it: no value")
            let subscription = hub.subscribe(to: [topic], resume: .now(snapshot: true), values: [Hub.Update(topic: topic, value: bytes("v0"))])
            hub.setWhileObserved(topic) { bytes("v1") }
            let first = HubTests().drain(subscription).map { String(decoding: $0.data, as: UTF8.self) }
            #expect(first == ["v0"], "the snapshot is the value it came with")
            #expect(hub.value(of: topic) == bytes("v1"))
            subscription.cancel()
        }
        #expect(hub.heldSubjectCount == before)
    }

    @Test func theQueueLimitIsForLiveEventsOnlyAndStaysSo() {
        let hub = Hub()
        for index in 1...50 { hub.publish(topic: "units", name: "unit", data: bytes("\(index)")) }
        let subscription = hub.subscribe(to: ["units"], resume: .after(0), queueLimit: 4)
        // The 50-event replay does not count, and four live events fit behind it.
        for index in 51...54 { hub.publish(topic: "units", name: "unit", data: bytes("\(index)")) }
        guard case .events(let first) = subscription.poll() else { Issue.record("ended early"); return }
        #expect(first.count == 54)
        // Once the replay is taken the limit is 4 again, not 54.
        for index in 55...59 { hub.publish(topic: "units", name: "unit", data: bytes("\(index)")) }
        guard case .ended(.overflowed) = subscription.poll() else { Issue.record("a fifth live event must overflow"); return }
    }

    @Test func resyncIsJSONWhateverTheTopic() throws {
        let hub = Hub()
        let subscription = hub.subscribe(to: [#"notifications/a"b\c"#], resume: .unknown)
        guard case .events(let events) = subscription.poll(), let resync = events.first(where: { $0.name == "resync" }) else {
            Issue.record("no resync"); return
        }
        #expect(try JSONValue.parse(resync.data)["topic"] == .string(#"notifications/a"b\c"#))
    }
}
