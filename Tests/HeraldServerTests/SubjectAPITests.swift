import Foundation
import HeraldTestSupport
import Testing

@Suite struct CurrencyAPITests {
    @Test func setNotifiesOnlyRealChanges() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("/currency").json["available"] as? [String] == ["dollar", "euro", "turkishLira", "gramGold"])
        let stream = try server.stream("/currency/events")
        #expect(try stream.next().event == "snapshot")
        #expect(try client.put("/currency", #"{"default":"dollar"}"#).status == 200)
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
        let event = try stream.next()
        #expect(event.event == "currency")
        #expect(event.json["default"] as? String == "euro")
        #expect(event.json["previous"] as? String == "dollar")
        #expect(event.json["topic"] as? String == "currency")
        let bad = try client.put("/currency", #"{"default":"yen"}"#)
        #expect(bad.status == 422)
        #expect((bad.json["detail"] as? String)?.contains("turkishLira") == true)
        #expect(try client.get("/currency").json["default"] as? String == "euro")
    }
}

@Suite struct TripAPITests {
    let seed = #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z","actualDeparture":"2015-10-09T13:14:53Z"}"#

    @Test func createReadAndLocalize() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let created = try client.post("/trips", seed)
        #expect(created.status == 201)
        let id = try #require(created.json["id"] as? String)
        #expect(created.json["delaySeconds"] as? Int == 300)
        #expect(created.json["delayed"] as? Bool == true)
        #expect((created.json["display"] as? [String: Any])?["delay"] as? String == "5 minutes delay")
        let german = try client.get("/trips/\(id)?locale=de_DE").json["display"] as? [String: Any]
        #expect(german?["delay"] as? String == "5 Minuten Verspätung")
        let turkish = try client.get("/trips/\(id)", headers: [("Accept-Language", "tr-TR,tr;q=0.9")]).json["display"] as? [String: Any]
        #expect(turkish?["delay"] as? String == "5 dakika rötar")
        #expect((try client.get("/trips").json["trips"] as? [Any])?.count == 1)
        #expect(try client.post("/trips", #"{"departure":"2015-10-09T13:26:33Z","arrival":"2015-10-09T13:09:53Z"}"#).status == 422)
        #expect(try client.get("/trips/77").status == 404)
    }

    /// `?timeZone=` beside `locale`: the display strings in that zone on a read, a list and a stream,
    /// an entity tag of its own, UTC by default, and a 400 that names a zone Herald does not know.
    @Test func displayStringsFollowATimeZone() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try #require(try client.post("/trips", #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z"}"#).json["id"] as? String)
        func display(_ answer: TestResponse) -> [String: Any]? { answer.json["display"] as? [String: Any] }
        let utc = try client.get("/trips/\(id)?locale=de_DE")
        #expect(display(utc)?["departure"] as? String == "13:09" && display(utc)?["timeZone"] as? String == "UTC")
        let berlin = try client.get("/trips/\(id)?locale=de_DE&timeZone=Europe/Berlin")
        #expect(display(berlin)?["departure"] as? String == "15:09" && display(berlin)?["timeZone"] as? String == "Europe/Berlin")
        #expect(berlin.header("ETag") != nil && berlin.header("ETag") != utc.header("ETag"), "an entity tag per zone")
        let listed = try client.get("/trips?timeZone=America/New_York").json["trips"] as? [[String: Any]]
        #expect((listed?.first?["display"] as? [String: Any])?["departure"] as? String == "9:09\u{202F}AM")
        let stream = try server.stream("/trips/\(id)/events?timeZone=Asia/Kolkata")
        defer { stream.close() }
        #expect((try stream.next().json["trip"] as? [String: Any]).flatMap { $0["display"] as? [String: Any] }?["departure"] as? String
                == "6:39\u{202F}PM")
        for zone in ["Mars/Olympus", "utc%2B1", "Europe"] {
            let wrong = try client.get("/trips/\(id)?timeZone=\(zone)")
            #expect(wrong.status == 400 && wrong.text.contains("unknown time zone"), "\(zone): \(wrong.text)")
            #expect(try client.get("/trips/\(id)/events?timeZone=\(zone)").status == 400)
        }
    }

    @Test func movingTheDepartureNotifiesTheChangedFieldsAndFieldsFilters() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try #require(try client.post("/trips", #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z"}"#).json["id"] as? String)
        let all = try server.stream("/trips/\(id)/events")
        let delayedOnly = try server.stream("/trips/\(id)/events?fields=delayed&snapshot=false")
        #expect(try all.next().event == "snapshot")
        let moved = try client.post("/trips/\(id)/delay", #"{"deltaSeconds":60}"#)
        #expect(moved.status == 200)
        #expect(moved.json["delayed"] as? Bool == true)
        let patched = try client.request("PATCH", "/trips/\(id)", json: #"{"actualDeparture":"2015-10-09T13:12:53Z"}"#)
        #expect(patched.json["delaySeconds"] as? Int == 180)
        let first = try all.next(), second = try all.next()
        #expect(first.json["changed"] as? [String] == ["actualDeparture", "delay", "delayed"])
        #expect(second.json["changed"] as? [String] == ["actualDeparture", "delay"])
        #expect(try delayedOnly.next().json["changed"] as? [String] == ["actualDeparture", "delay", "delayed"])
        // The second change did not touch 'delayed': the next event is a third change that does.
        #expect(try client.request("PATCH", "/trips/\(id)", json: #"{"actualDeparture":"2015-10-09T13:09:53Z"}"#).status == 200)
        #expect(try delayedOnly.next().json["changed"] as? [String] == ["actualDeparture", "delay", "delayed"],
                "the change back on time, and nothing before it")
        #expect(try client.post("/trips/\(id)/delay", #"{"deltaSeconds":0}"#).status == 422)
        #expect(try client.post("/trips/99/delay", #"{"deltaSeconds":5}"#).status == 404)
    }

    /// `fields=` on an auction's and a unit's stream, as on a trip's: an observer of `price` gets the
    /// bids and not the ticks, one of `leader` only the bids that changed who leads, one of `status` the
    /// close; a unit's observer of `status` misses a rename. Fields of another subject are refused.
    @Test func fieldsFilterAuctionAndUnitStreams() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let id = try server.auction(countdown: 2)
        let price = try server.stream("/auctions/\(id)/events?fields=price&snapshot=false")
        let leader = try server.stream("/auctions/\(id)/events?fields=leader&snapshot=false")
        let status = try server.stream("/auctions/\(id)/events?fields=status&snapshot=false")
        defer { price.close(); leader.close(); status.close() }
        for (bidder, amount) in [("ann", 5), ("ann", 6), ("bob", 7)] {
            #expect(try client.post("/auctions/\(id)/bids", #"{"bidder":"\#(bidder)","amount":\#(amount)}"#).status == 201)
        }
        #expect(try price.next(3).map(\.event) == ["bid", "bid", "bid"], "three prices")
        #expect(try leader.next(2).compactMap { ($0.json["bid"] as? [String: Any])?["amount"] as? Int } == [5, 7],
                "ann's raise did not change who leads")
        let closed = try status.next()
        #expect(closed.event == "closed" && closed.json["winner"] as? String == "bob", "no tick, no bid before the close: \(closed)")

        #expect(try client.put("/units/fx", #"{"name":"Fox","status":"healthy"}"#).status == 201)
        let unitStatus = try server.stream("/units/fx/events?fields=status&snapshot=false")
        defer { unitStatus.close() }
        #expect(try client.put("/units/fx", #"{"name":"Foxtrot","status":"healthy"}"#).status == 200)
        #expect(try client.put("/units/fx", #"{"name":"Foxtrot","status":"wounded"}"#).status == 200)
        let changed = try unitStatus.next()
        #expect((changed.json["unit"] as? [String: Any])?["status"] as? String == "wounded", "the rename did not pass: \(changed)")

        let wrong = try client.get("/units/fx/events?fields=price")
        #expect(wrong.status == 400 && wrong.text.contains("units: name, status"), "\(wrong.text)")
        #expect(try client.get("/currency/events?fields=status").status == 400)
    }
}

@Suite struct UnitAPITests {
    @Test func putGetDeleteAndPerUnitObservation() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let created = try client.put("/units/alpha", #"{"name":"Alpha","status":"healthy"}"#)
        #expect(created.status == 201)
        #expect(created.json["face"] as? String == "🙂")
        #expect(try client.put("/units/beta", #"{"name":"Beta","status":"healthy"}"#).status == 201)
        let alpha = try server.stream("/units/alpha/events")
        let every = try server.stream("/units/events")
        #expect(try alpha.next().event == "snapshot")
        #expect(((try every.next().json["units"]) as? [Any])?.count == 2)

        #expect(try client.put("/units/beta", #"{"name":"Beta","status":"wounded"}"#).status == 200)
        #expect(try client.put("/units/alpha", #"{"name":"Alpha","status":"dead"}"#).status == 200)
        let change = try alpha.next()
        #expect(change.event == "unit")
        #expect((change.json["unit"] as? [String: Any])?["status"] as? String == "dead", "alpha's observer never sees beta")
        #expect(try every.next(2).compactMap { ($0.json["unit"] as? [String: Any])?["id"] as? String } == ["beta", "alpha"])

        #expect(try client.request("DELETE", "/units/alpha").status == 204)
        #expect(try alpha.next().event == "removed")
        #expect(try client.get("/units/alpha").status == 404)
        #expect(try client.request("DELETE", "/units/alpha").status == 404)
        #expect(try client.put("/units/bad%20id", #"{"name":"x","status":"healthy"}"#).status == 422)
        #expect(try client.put("/units/x", #"{"name":"x","status":"sleepy"}"#).status == 422)
        #expect(try client.get("/units/bad%20id/events").status == 400, "an id that no unit can have is no topic")
    }
}

@Suite struct NotificationAPITests {
    @Test func postedNotificationsReachObserversOfTheNameAndObject() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        let all = try server.stream("/notifications/door.opened/events")
        let front = try server.stream("/notifications/door.opened/events?object=front")
        let posted = try client.post("/notifications/door.opened", #"{"object":"back","userInfo":{"by":"ann"}}"#)
        #expect(posted.status == 202)
        #expect(posted.json["id"] is String)
        _ = try client.post("/notifications/door.opened", #"{"object":"front"}"#)
        _ = try client.post("/notifications/other", #"{}"#)
        let first = try all.next()
        #expect(first.event == "notification")
        #expect(first.id == posted.json["id"] as? String)
        #expect((first.json["userInfo"] as? [String: Any])?["by"] as? String == "ann")
        #expect(try all.next().json["object"] as? String == "front")
        #expect(try front.next().json["object"] as? String == "front")
        // No snapshot, and nothing of other names: the next event is a marker of this name.
        _ = try client.post("/notifications/door.opened", #"{"object":"marker"}"#)
        #expect(try all.next().json["object"] as? String == "marker")
        #expect(try client.post("/notifications/door.opened", #"{"userInfo":[1]}"#).status == 422)
        #expect(try client.post("/notifications/bad%20name", #"{}"#).status == 422)
    }
}

@Suite struct NotificationClockTests {
    @Test func postedAtIsTheInjectedClocksTime() throws {
        let clock = ManualClock(now: Date(timeIntervalSince1970: 1_444_396_193))
        let server = try TestHerald(clock: clock)
        defer { server.stop() }
        let stream = try server.stream("/notifications/door/events")
        clock.advance(by: 3600)
        _ = try server.client().post("/notifications/door", #"{"userInfo":{}}"#)
        let event = try stream.next(named: "notification")
        #expect(event.json["postedAt"] as? String == "2015-10-09T14:09:53Z", "one clock for the event and its time")
    }
}

/// What caches see: every answer of state says how fresh it may be kept, and a trip's answer, which is
/// in the reader's language, says so (`Vary`) and has a tag of its own in each language.
@Suite struct CachingTests {
    @Test func stateIsRevalidatedAndEachLanguageHasItsOwnTag() throws {
        let server = try TestHerald(examples: true)
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("/units/u1", #"{"name":"U","status":"healthy"}"#).status == 201)
        let trip = try #require(try client.post("/trips", #"{"departure":"2015-10-09T13:09:53Z","arrival":"2015-10-09T13:26:33Z"}"#)
            .json["id"] as? String)
        for path in ["/currency", "/units/u1", "/auctions/1", "/auctions", "/units", "/trips", "/trips/\(trip)"] {
            #expect(try client.get(path).header("Cache-Control") == "no-cache", "\(path)")
        }
        for path in ["/health", "/health/live", "/health/ready", "/subjects"] {
            #expect(try client.get(path).header("Cache-Control") == "no-store", "\(path)")
        }
        #expect(try client.get("/openapi.yaml").header("Cache-Control") == "no-cache")

        let german = try client.get("/trips/\(trip)", headers: [("Accept-Language", "de-DE")])
        let english = try client.get("/trips/\(trip)", headers: [("Accept-Language", "en-US")])
        #expect(german.header("Vary")?.contains("Accept-Language") == true && english.header("Vary")?.contains("Accept-Language") == true)
        #expect(try client.get("/trips").header("Vary")?.contains("Accept-Language") == true)
        #expect(german.text != english.text, "the answers differ by language")
        #expect(german.header("Content-Language") == "de-DE" && english.header("Content-Language") == "en-US")
        // A language Herald has no strings for is answered in the fallback, and says so.
        let japanese = try client.get("/trips/\(trip)", headers: [("Accept-Language", "ja-JP")])
        #expect(japanese.header("Content-Language") == "en-US" && japanese.text == english.text)
        let (de, en) = (try #require(german.header("ETag")), try #require(english.header("ETag")))
        #expect(de != en, "so do their tags")
        // A cache that revalidates the German copy for an English reader gets the English answer.
        let revalidated = try client.get("/trips/\(trip)", headers: [("Accept-Language", "en-US"), ("If-None-Match", de)])
        #expect(revalidated.status == 200 && revalidated.text == english.text)
        #expect(try client.get("/trips/\(trip)", headers: [("Accept-Language", "de-DE"), ("If-None-Match", de)]).status == 304)
        // A change conditioned on the tag of the language it is asked in.
        let delayed = try client.request("POST", "/trips/\(trip)/delay", json: #"{"deltaSeconds":60}"#,
                                         headers: [("Accept-Language", "de-DE"), ("If-Match", de)])
        #expect(delayed.status == 200, "\(delayed.text)")
        #expect(delayed.header("Vary")?.contains("Accept-Language") == true)
    }
}

/// A unit may be observed before it exists: its stream starts with a snapshot that says it is absent,
/// and gets `unit` when it is made; the made-up id costs nothing once its stream closes.
@Suite struct AbsentUnitTests {
    @Test func aUnitIsObservedBeforeItExists() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("/units/medic").status == 404, "a read of it is still 404")
        let stream = try server.stream("/units/medic/events")
        let snapshot = try stream.next()
        #expect(snapshot.event == "snapshot" && snapshot.data == #"{"topic":"units/medic","unit":null}"#, "\(snapshot)")
        #expect(try client.put("/units/medic", #"{"name":"Medic","status":"healthy"}"#).status == 201)
        let made = try stream.next(named: "unit")
        #expect((made.json["unit"] as? [String: Any])?["id"] as? String == "medic")
        #expect(try client.get("/units/medic").status == 200)
        stream.close()
        // Made, its value is its own: a new observer gets it after the first left.
        #expect(eventually { (try? server.observers(of: "units/medic")) == 0 })
        let again = try server.stream("/units/medic/events")
        #expect((try again.next().json["unit"] as? [String: Any])?["name"] as? String == "Medic")
        again.close()
        // A made-up id leaves nothing behind once its stream closes.
        let ghost = try server.stream("/units/ghost/events")
        #expect(try ghost.next().data == #"{"topic":"units/ghost","unit":null}"#)
        #expect(eventually { (try? server.observers(of: "units/ghost")) == 1 })
        ghost.close()
        #expect(eventually {
            let topics = ((try? client.get("/subjects").json["subjects"] as? [[String: Any]]) ?? []).compactMap { $0["topic"] as? String }
            return !topics.contains("units/ghost")
        }, "the made-up id is forgotten")
        #expect(try client.get("/units/ghost").status == 404)
    }
}
