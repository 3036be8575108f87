import Foundation
import HeraldDomain
import HeraldHTTP
import HeraldServer
import HeraldTestSupport
import Testing

/// A stream outlives its token: it is told its id and end (`stream`), warned before the end
/// (`token-expiring`), renewed with `POST /streams/{id}/token`, and ends with `expired` when it is not.
/// The server's and the engine's time is a clock the test moves.
@Suite struct TokenRenewalTests {
    func secured(_ clock: ManualClock) async throws -> TestHerald {
        try await TestHerald.secured(clock: clock) { configuration in
            configuration.http.streamClock = clock
            configuration.http.expiryWarning = .seconds(20)
        }
    }

    func renew(_ server: TestHerald, _ stream: String, with token: String) throws -> TestResponse {
        try server.client().request("POST", "/streams/\(stream)/token", headers: Tokens.bearer(token))
    }

    func bid(_ server: TestHerald, _ auction: String, _ amount: Int, _ token: String) throws {
        let response = try server.client().request("POST", "/auctions/\(auction)/bids", json: #"{"bidder":"ann","amount":\#(amount)}"#,
                                                   headers: Tokens.bearer(token))
        #expect(response.status == 201, "\(response.text)")
    }

    func amount(_ event: SSEEvent) -> Int? { (event.json["bid"] as? [String: Any])?["amount"] as? Int }

    /// A stream clock whose `elapsed` and `date`, read one after the other, fall on two sides of a
    /// step of `step` seconds (the date is read that far ahead), while `reading` is one moment: what
    /// a clock moved by another thread can do between two reads.
    final class SteppingClock: StreamClock, Sendable {
        let base: ManualClock
        let step: Double
        init(_ base: ManualClock, step: Double) { (self.base, self.step) = (base, step) }
        var elapsed: Duration { base.elapsed }
        var date: Date { base.now.addingTimeInterval(step) }
        var reading: (elapsed: Duration, date: Date) { base.reading }
    }

    /// The engine files a token's end from one reading of its clock. Here a date read apart is 30 s
    /// ahead: filed from it, a 60 s token's stream ended 30 s in (and a step between the reads of a
    /// test's clock once left a stream open past its end, its entry taken early and dropped).
    @Test func aTokensEndIsFiledFromOneReadingOfTheClock() async throws {
        let manual = ManualClock(now: Date())
        let start = manual.now
        let server = try await TestHerald.secured(clock: manual) { configuration in
            configuration.http.streamClock = SteppingClock(manual, step: 30)
            configuration.http.expiryWarning = .seconds(5)
        }
        defer { server.stop() }
        let token = try await Tokens.make(expires: start.addingTimeInterval(60))
        let stream = try server.stream("/currency/events", headers: Tokens.bearer(token))
        #expect(try stream.next().event == "stream")
        manual.advance(by: 40)
        #expect(!stream.awaitEnd(timeout: 3), "40 s in, the stream of a 60 s token is open")
        manual.advance(by: 25)
        #expect(try stream.next(named: "expired").json["expiresAt"] as? String == Timestamp.format(start.addingTimeInterval(60)))
        #expect(stream.awaitEnd(timeout: 15))
    }

    /// Renewed twice, a stream runs past three `exp`s on one connection and loses no bid; not renewed
    /// a third time, it ends with `expired`.
    @Test func aStreamRenewedTwiceRunsPastThreeExpsWithoutAGap() async throws {
        let clock = ManualClock(now: Date())
        let start = clock.now
        let server = try await secured(clock)
        defer { server.stop() }
        let writer = try await Tokens.make(expires: start.addingTimeInterval(86_400))
        let created = try server.client().request("POST", "/auctions", json: #"{"item":"lamp","countdownSeconds":3600}"#,
                                                  headers: Tokens.bearer(writer))
        let auction = try #require(created.json["id"] as? String)
        let first = try await Tokens.make(expires: start.addingTimeInterval(60))
        let stream = try server.stream("/auctions/\(auction)/events", headers: Tokens.bearer(first))
        let opened = try stream.next()
        #expect(opened.event == "stream")
        #expect(opened.id == nil, "a stream's own events leave Last-Event-ID alone")
        let id = try #require(opened.json["stream"] as? String)
        #expect(id.count == 32)
        #expect(opened.json["expiresAt"] as? String == Timestamp.format(start.addingTimeInterval(60)))
        #expect(try stream.next().event == "snapshot")

        var amount = 0
        func bidAndSee() throws {
            amount += 10
            try bid(server, auction, amount, writer)
            #expect(self.amount(try stream.next(named: "bid")) == amount, "bid \(amount) arrived in order")
        }
        try bidAndSee()
        clock.advance(by: 41)  // 19 s left: inside the 20 s warning
        let warned = try stream.next(named: "token-expiring")
        #expect(warned.json["stream"] as? String == id)
        #expect(warned.json["expiresAt"] as? String == Timestamp.format(start.addingTimeInterval(60)))
        let second = try await Tokens.make(expires: start.addingTimeInterval(120))
        #expect(try renew(server, id, with: second).status == 204)
        clock.advance(by: 25)  // 66 s: past the first exp
        try bidAndSee()
        clock.advance(by: 35)  // 101 s: 19 s before the second
        let warnedAgain = try stream.next(named: "token-expiring")
        #expect(warnedAgain.json["expiresAt"] as? String == Timestamp.format(start.addingTimeInterval(120)))
        let third = try await Tokens.make(expires: start.addingTimeInterval(180))
        #expect(try renew(server, id, with: third).status == 204)
        clock.advance(by: 25)  // 126 s: past the second exp
        try bidAndSee()
        #expect(!stream.awaitEnd(timeout: 1), "renewed: the stream is open past its second token's exp")
        clock.advance(by: 36)  // 162 s: warned, not renewed
        #expect(try stream.next(named: "token-expiring").json["stream"] as? String == id)
        clock.advance(by: 20)  // 182 s: past the third
        // The end, with `expired` last (the countdown's ticks aside).
        var names: [String] = []
        while let event = try? stream.next(timeout: 15) {
            if event.event != "tick" { names.append(event.event ?? "message") }
            if event.event == "expired" {
                #expect(event.json["stream"] as? String == id)
                #expect(event.json["expiresAt"] as? String == Timestamp.format(start.addingTimeInterval(180)))
            }
        }
        #expect(names == ["expired"], "\(names)")
        #expect(stream.awaitEnd(timeout: 15), "not renewed: the stream ends")
    }

    @Test func aRenewalForAnotherSubjectOrWithoutTheGrantsIs403() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let token = try await Tokens.make(sub: "ann", expires: clock.now.addingTimeInterval(600))
        let stream = try server.stream("/events?topic=auctions/1&topic=currency", headers: Tokens.bearer(token))
        let id = try #require(try stream.next().json["stream"] as? String)
        let bob = try await Tokens.make(sub: "bob", expires: clock.now.addingTimeInterval(3600))
        let refused = try renew(server, id, with: bob)
        #expect(refused.status == 403)
        #expect(refused.header("Content-Type") == "application/problem+json")
        let narrow = try await Tokens.make(sub: "ann", subscribe: ["currency"], expires: clock.now.addingTimeInterval(3600))
        #expect(try renew(server, id, with: narrow).status == 403, "the grants no longer cover auctions/1")
        #expect(try server.client().request("POST", "/streams/\(id)/token").status == 401)
        #expect(try server.client().request("POST", "/streams/\(id)/token", headers: Tokens.bearer("garbage")).status == 401)
        let fresh = try await Tokens.make(sub: "ann", expires: clock.now.addingTimeInterval(3600))
        #expect(try renew(server, "0123456789abcdef0123456789abcdef", with: fresh).status == 404)
        // Refused renewals changed nothing: the stream still ends at its first token's exp.
        clock.advance(by: 601)
        #expect(try stream.next(named: "expired").json["stream"] as? String == id)
        #expect(stream.awaitEnd(timeout: 15))
        #expect(try renew(server, id, with: fresh).status == 404, "an ended stream cannot be renewed")
    }

    @Test func aStreamOpenedWithLessTimeThanTheWarningIsWarnedAtOnce() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let token = try await Tokens.make(expires: clock.now.addingTimeInterval(10))
        let stream = try server.stream("/currency/events", headers: Tokens.bearer(token))
        #expect(try stream.next().event == "stream")
        #expect(try stream.next().event == "snapshot")
        clock.advance(by: 1)
        #expect(try stream.next().event == "token-expiring")
    }

    @Test func withoutAKeyStreamsHaveNoTokenToRenew() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let stream = try server.stream("/currency/events")
        #expect(try stream.next().event == "snapshot", "no `stream` event without a token")
        #expect(try server.client().request("POST", "/streams/abc/token", headers: Tokens.bearer("x")).status == 404)
    }
}

extension TokenRenewalTests {
    /// A renewal's 403 does not say whose the stream is; a stream opened with a token without `sub`
    /// renews only with a token of the same grants (not with any other token without `sub`).
    @Test func aRefusedRenewalNamesNoOneAndASubjectlessStreamNeedsTheSameGrants() async throws {
        let clock = ManualClock(now: Date())
        let server = try await secured(clock)
        defer { server.stop() }
        let ann = try await Tokens.make(sub: "ann", expires: clock.now.addingTimeInterval(60))
        let stream = try server.stream("/currency/events", headers: Tokens.bearer(ann))
        let id = try #require(try stream.next().json["stream"] as? String)
        let refused = try renew(server, id, with: try await Tokens.make(sub: "mallory", expires: clock.now.addingTimeInterval(600)))
        #expect(refused.status == 403)
        #expect(!refused.text.contains("ann") && !refused.text.contains("mallory"), "names no one: \(refused.text)")

        let opening = try await Tokens.make(sub: nil, publish: [], subscribe: ["currency"], expires: clock.now.addingTimeInterval(60))
        let anonymous = try server.stream("/currency/events", headers: Tokens.bearer(opening))
        let anonymousID = try #require(try anonymous.next().json["stream"] as? String)
        let wider = try await Tokens.make(sub: nil, publish: ["*"], subscribe: ["*"], expires: clock.now.addingTimeInterval(600))
        let other = try renew(server, anonymousID, with: wider)
        #expect(other.status == 403, "another sub-less token with other grants: \(other.text)")
        let same = try await Tokens.make(sub: nil, publish: [], subscribe: ["currency"], expires: clock.now.addingTimeInterval(600))
        #expect(try renew(server, anonymousID, with: same).status == 204)
    }
}
