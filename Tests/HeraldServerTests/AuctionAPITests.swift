import Foundation
import HeraldTestSupport
import Testing

@Suite struct AuctionAPITests {
    /// `GET /auctions/{id}` is sent from a response kept for its cached bytes: the same while nothing
    /// changes, the new state at once after a bid, and never another request's headers.
    @Test func aKeptAnswerIsNeverStale() throws {
        let server = try TestHerald(corsOrigin: "https://a.example")
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction(countdown: 30)
        let first = try client.get("/auctions/\(id)")
        let second = try client.get("/auctions/\(id)")
        #expect(first.status == 200 && second.status == 200)
        #expect(first.text == second.text)
        #expect(first.json["bidCount"] as? Int == 0)
        let allowed = try client.get("/auctions/\(id)", headers: [("Origin", "https://a.example")])
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://a.example")
        #expect(try client.get("/auctions/\(id)").header("Access-Control-Allow-Origin") == nil, "headers are part of what is kept")
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        let after = try client.get("/auctions/\(id)")
        #expect(after.json["bidCount"] as? Int == 1 && after.json["leader"] as? String == "ann")
        let head = try client.request("HEAD", "/auctions/\(id)")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try client.get("/auctions/\(id)").text == after.text, "and the connection carries on after a HEAD")
    }

    /// A bid's answer is its event's payload, byte for byte (the auction is written once for the event,
    /// the subject's value and the answer), and a new stream's snapshot is the auction after the last bid.
    @Test func aBidAnswersWithTheBytesItsEventCarries() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction(countdown: 30)
        let stream = try server.stream("/auctions/\(id)/events")
        defer { stream.close() }
        _ = try stream.next()  // the snapshot
        for (bidder, amount) in [("ann", 5), ("bob", 6)] {
            let bid = try client.post("/auctions/\(id)/bids", #"{"bidder":"\#(bidder)","amount":\#(amount)}"#)
            #expect(bid.status == 201 && bid.header("Content-Type") == "application/json")
            let event = try stream.next(named: "bid")
            let prefix = #"{"topic":"auctions/\#(id)","#
            #expect(event.data.hasPrefix(prefix), "\(event.data)")
            #expect("{" + event.data.dropFirst(prefix.count) == bid.text, "the answer is the event without its topic")
            #expect((bid.json["auction"] as? [String: Any])?["leader"] as? String == bidder)
        }
        let snapshot = try server.stream("/auctions/\(id)/events")
        defer { snapshot.close() }
        let value = try snapshot.next()
        let auction = try #require(try client.post("/auctions/\(id)/bids", #"{"bidder":"cy","amount":7}"#).json["auction"] as? [String: Any])
        #expect(value.data.contains(#""leader":"bob""#) && auction["leader"] as? String == "cy")
    }

    @Test func createGetListAndBid() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let created = try client.post("/auctions", #"{"item":"Pocket watch","countdownSeconds":30,"startingPrice":100}"#)
        #expect(created.status == 201)
        let id = try #require(created.json["id"] as? String)
        #expect(created.header("Location") == "/auctions/\(id)")
        #expect(created.json["status"] as? String == "open")
        #expect(created.json["remainingSeconds"] is NSNull)
        #expect(try client.get("/auctions/\(id)").json["item"] as? String == "Pocket watch")
        #expect((try client.get("/auctions").json["auctions"] as? [Any])?.count == 1)

        let bid = try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":100}"#)
        #expect(bid.status == 201)
        let auction = try #require(bid.json["auction"] as? [String: Any])
        #expect(auction["price"] as? Int == 100)
        #expect(auction["leader"] as? String == "ann")
        #expect(auction["remainingSeconds"] as? Int == 30)
        #expect((bid.json["bid"] as? [String: Any])?["bidder"] as? String == "ann")

        let low = try client.post("/auctions/\(id)/bids", #"{"bidder":"bob","amount":100}"#)
        #expect(low.status == 409)
        #expect(low.header("Content-Type") == "application/problem+json")
        #expect(low.json["price"] as? Int == 100)
        #expect(low.json["minimumBid"] as? Int == 101)
        #expect(low.json["title"] as? String == "Conflict")
        let bids = try client.get("/auctions/\(id)/bids").json["bids"] as? [[String: Any]]
        #expect(bids?.map { $0["amount"] as? Int } == [100])
    }

    @Test func aBidsLocationIsServed() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let placed = try client.post("/auctions/\(id)/bids", #"{"bidder":"zoe","amount":5000}"#)
        let location = try #require(placed.header("Location"))
        let served = try client.get(location)
        #expect(served.status == 200, "the bid's Location exists")
        #expect(served.json["bidder"] as? String == "zoe")
        #expect(try client.get("/auctions/\(id)/bids/999").status == 404)
    }

    @Test func aClosedAuctionRefusesBids() throws {
        let clock = ManualClock()
        let server = try TestHerald(clock: clock)
        defer { server.stop() }
        let id = try server.auction(countdown: 2)
        let client = server.client()
        #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"ann","amount":5}"#).status == 201)
        clock.advance(by: 2)
        let closed = try client.get("/auctions/\(id)").json
        #expect(closed["status"] as? String == "closed")
        #expect(closed["winner"] as? String == "ann")
        let refused = try client.post("/auctions/\(id)/bids", #"{"bidder":"bob","amount":50}"#)
        #expect(refused.status == 409)
        #expect((refused.json["detail"] as? String)?.contains("closed") == true)
        #expect(refused.json["price"] as? Int == 5 && refused.json["winner"] as? String == "ann", "what the bidder needs to know")
        #expect(refused.json["minimumBid"] == nil)
        #expect(try client.get("/auctions/\(id)/bids").json["bids"].map { ($0 as? [Any])?.count } == 1)
    }

    @Test func badInputGetsAProblemAndChangesNothing() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction()
        let cases: [(String, String, [(String, String)], Int)] = [
            ("/auctions", "{not json", [], 400),
            ("/auctions", #"{"item":"x"}"#, [("Content-Type", "text/plain")], 415),
            ("/auctions", #"{"item":""}"#, [], 422),
            ("/auctions", #"{"item":"x","countdownSeconds":"7"}"#, [], 422),
            ("/auctions", #"[1,2]"#, [], 422),
            ("/auctions/\(id)/bids", #"{"bidder":"ann","amount":1.5}"#, [], 422),
            ("/auctions/\(id)/bids", #"{"bidder":"ann"}"#, [], 422),
            ("/auctions/\(id)/bids", #"{"bidder":"ann","amount":-1}"#, [], 422),
            // No store can hold a NUL as text (PostgreSQL refuses it): it is the client's mistake, not a 500.
            ("/auctions", #"{"item":"a\u0000b"}"#, [], 422),
            ("/auctions/\(id)/bids", #"{"bidder":"ann\u0000","amount":1}"#, [], 422),
            ("/auctions/999/bids", #"{"bidder":"ann","amount":1}"#, [], 404),
        ]
        for (path, body, headers, status) in cases {
            let response = try client.request("POST", path, json: body, headers: headers)
            #expect(response.status == status, "\(path) \(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.json["status"] as? Int == status)
            #expect(response.json["detail"] is String)
        }
        let invalid = try client.post("/auctions", #"{"item":"","countdownSeconds":0}"#)
        let fields = (invalid.json["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String }
        #expect(Set(fields ?? []) == ["item", "countdownSeconds"])
        #expect((try client.get("/auctions").json["auctions"] as? [Any])?.count == 1)
        #expect(try client.get("/auctions/\(id)").json["bidCount"] as? Int == 0)
    }

    @Test func aBodyOverTheLimitIs413() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let item = String(repeating: "x", count: 70 * 1024)
        let response = try client.post("/auctions", #"{"item":"\#(item)"}"#)
        #expect(response.status == 413)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(try server.client().get("/auctions").json["auctions"].map { ($0 as? [Any])?.count } == 0)
    }

    @Test func unknownRoutesAndMethods() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("/nothing").status == 404)
        #expect(try client.get("/auctions/404").status == 404)
        let wrong = try client.request("DELETE", "/auctions")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "GET, HEAD, OPTIONS, POST")
    }

    /// An auction is priced in a currency: the default when it opens, or the one it names. Every answer
    /// and event says which; a later change of the default leaves it as it is (no rates are invented);
    /// it survives a restart; an unknown currency is 422 and opens nothing.
    @Test func anAuctionIsPricedInItsCurrency() throws {
        let directory = temporaryDataDirectory()
        defer { removeTemporaryDirectory(directory) }
        var ids: [String] = []
        do {
            let server = try TestHerald(dataDirectory: directory)
            defer { server.stop() }
            let client = server.client()
            #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
            let euro = try client.post("/auctions", #"{"item":"Vase","countdownSeconds":60,"startingPrice":500}"#)
            #expect(euro.status == 201 && euro.json["currency"] as? String == "euro", "\(euro.text)")
            let gold = try client.post("/auctions", #"{"item":"Ring","countdownSeconds":60,"currency":"gramGold"}"#)
            #expect(gold.json["currency"] as? String == "gramGold")
            ids = [try #require(euro.json["id"] as? String), try #require(gold.json["id"] as? String)]
            let stream = try server.stream("/auctions/\(ids[0])/events")
            defer { stream.close() }
            #expect((try stream.next().json["auction"] as? [String: Any])?["currency"] as? String == "euro")
            #expect(try client.put("/currency", #"{"default":"dollar"}"#).status == 200)
            let bid = try client.post("/auctions/\(ids[0])/bids", #"{"bidder":"ann","amount":650}"#)
            #expect((bid.json["auction"] as? [String: Any])?["currency"] as? String == "euro", "the default's change moved nothing")
            let tick = try stream.next(named: "tick")
            #expect(tick.json["currency"] as? String == "euro" && tick.json["price"] as? Int == 650)
            let wrong = try client.post("/auctions", #"{"item":"Lamp","currency":"bitcoin"}"#)
            #expect(wrong.status == 422 && wrong.text.contains("bitcoin") && wrong.text.contains("turkishLira"), "\(wrong.text)")
            #expect((try client.get("/auctions").json["auctions"] as? [Any])?.count == 2)
            let currency = try client.get("/currency").json["minorDigits"] as? [String: Int]
            #expect(currency?["euro"] == 2 && currency?["gramGold"] == 3)
        }
        let server = try TestHerald(dataDirectory: directory)
        defer { server.stop() }
        #expect(try server.client().get("/auctions/\(ids[0])").json["currency"] as? String == "euro")
        #expect(try server.client().get("/auctions/\(ids[1])").json["currency"] as? String == "gramGold")
    }
}
