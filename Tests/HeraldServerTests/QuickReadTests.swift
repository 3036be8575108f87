import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// Quick reads (`QuickReads`) answer byte for byte as the general path does, and only where they may.
@Suite struct QuickReadTests {
    /// The answer without its `Date` line, the one field two servers may not agree on.
    func comparable(_ answer: String) -> String {
        answer.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.lowercased().hasPrefix("date:") }.joined(separator: "\r\n")
    }

    func get(_ target: String, _ fields: String = "", method: String = "GET") -> String {
        "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-ID: quick-1\r\nConnection: close\r\n\(fields)\r\n"
    }

    /// Each request, and whether a quick read may answer it.
    func requests(etag: String) -> [(String, quick: Bool)] {
        [
            (get("/auctions/1"), true),
            (get("/currency"), true),
            (get("/units/scout"), true),
            (get("/auctions/%31"), true),
            (get("/auctions/1/"), true),
            (get("/auctions/999"), false),
            (get("/auctions/x1"), false),
            (get("/units/nobody"), false),
            (get("/auctions/1?view=full"), false),
            (get("/auctions/1", "Origin: https://a.example\r\n"), false),
            (get("/auctions/1", "If-None-Match: \(etag)\r\n"), false),
            (get("/auctions/1", "If-None-Match: \"other\"\r\n"), false),
            (get("/auctions/1", "If-Match: \"other\"\r\n"), false),
            (get("/auctions/1", "If-Match: \(etag)\r\n"), false),
            (get("/auctions/1", method: "HEAD"), false),
            (get("/auctions/1/bids"), false),
        ]
    }

    @Test(arguments: ["*", "https://a.example"])
    func quickReadsAnswerAsTheGeneralPathDoes(cors: String) throws {
        // Two servers on the same clock and examples: one with quick reads, one without.
        let clock = ManualClock()
        let quick = try TestHerald(clock: clock, examples: true, corsOrigin: cors)
        defer { quick.stop() }
        let general = try TestHerald(clock: clock, examples: true, corsOrigin: cors) { $0.quickReads = false }
        defer { general.stop() }
        for round in 0..<2 {
            if round == 1 {
                // A bid changes the auction, its tag and the last event id on both.
                for server in [quick, general] {
                    let bid = try server.client().post("/auctions/1/bids", #"{"bidder":"ann","amount":500}"#)
                    #expect(bid.status == 201)
                }
            }
            let etag = try quick.client().get("/auctions/1").header("ETag") ?? "-"
            #expect(etag == (try general.client().get("/auctions/1").header("ETag")))
            for (request, isQuick) in requests(etag: etag) {
                let before = quick.herald.quickReadCount
                let answer = try quick.exchange(request)
                #expect(quick.herald.quickReadCount - before == (isQuick ? 1 : 0), "\(request)")
                #expect(answer.hasPrefix("HTTP/1.1 "), "\(request)")
                #expect(comparable(answer) == comparable(try general.exchange(request)), "\(request)")
            }
        }
        #expect(general.herald.quickReadCount == 0)
    }

    @Test func aQuickReadIsCountedAndLoggedAsARead() throws {
        let quick = try TestHerald(examples: true)
        defer { quick.stop() }
        let before = quick.herald.quickReadCount
        for _ in 0..<3 { #expect(try quick.client().get("/currency").status == 200) }
        #expect(quick.herald.quickReadCount - before == 3)
        let metrics = try quick.client().get("/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("herald_http_requests_total{") && $0.contains("route=\"/currency\"") && $0.contains("method=\"GET\"") }
        #expect(line.map { $0.hasSuffix(" 3") } == true, "\(line ?? "no line")")
    }

    /// A GET of a target a quick read answered, nothing changed since, is answered with that read's
    /// response without reading again (`QuickResponses.lasting`). Any change, of any subject, makes the
    /// next GET of each target read again; an auction whose countdown runs (its seconds go down
    /// with time) is read every time.
    @Test func aLastingAnswerIsGivenUntilAnythingChanges() throws {
        let herald = try TestHerald(examples: true)
        defer { herald.stop() }
        let client = try herald.client()
        func read(_ path: String) throws -> (json: [String: Any], lasting: Bool, eventID: String?) {
            let before = herald.herald.lastingAnswerCount
            let answer = try client.get(path)
            #expect(answer.status == 200, "\(path)")
            return (answer.json, herald.herald.lastingAnswerCount > before, answer.header("Herald-Event-ID"))
        }
        for path in ["/currency", "/units/scout", "/auctions/1"] {
            let first = try read(path), second = try read(path)
            #expect(!first.lasting && second.lasting, "\(path)")
            #expect(first.eventID == second.eventID && first.json.keys.sorted() == second.json.keys.sorted(), "\(path)")
        }
        #expect(try client.put("/currency", #"{"default":"euro"}"#).status == 200)
        let currency = try read("/currency")
        #expect(!currency.lasting && currency.json["default"] as? String == "euro")
        // The currency's change moved the state's generation: a unit is read again too.
        let unit = try read("/units/scout")
        #expect(!unit.lasting && unit.eventID == currency.eventID)
        #expect(try read("/currency").lasting && read("/units/scout").lasting)
        #expect(try client.put("/units/scout", #"{"name":"Scout","status":"dead"}"#).status == 200)
        let dead = try read("/units/scout")
        #expect(!dead.lasting && dead.json["status"] as? String == "dead")
        #expect(try read("/units/scout").lasting)
        #expect(try client.request("DELETE", "/units/scout").status == 204)
        let lastingBefore = herald.herald.lastingAnswerCount
        #expect(try client.get("/units/scout").status == 404)
        #expect(herald.herald.lastingAnswerCount == lastingBefore)
        // A bid starts the countdown: each read is made, and shows the bid.
        #expect(try client.post("/auctions/1/bids", #"{"bidder":"ann","amount":500}"#).status == 201)
        for _ in 0..<3 {
            let auction = try read("/auctions/1")
            #expect(!auction.lasting && auction.json["price"] as? Int == 500 && auction.json["remainingSeconds"] as? Int != nil)
        }
    }

    /// Reads `count` answers from a kept-alive connection: each a head and its `Content-Length` bytes.
    func answers(_ count: Int, from socket: Socket) throws -> [String] {
        var bytes: [UInt8] = []
        var answers: [String] = []
        while answers.count < count {
            if let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if bytes.count >= end.upperBound + length {
                    answers.append(String(decoding: bytes[..<(end.upperBound + length)], as: UTF8.self))
                    bytes.removeFirst(end.upperBound + length)
                    continue
                }
            }
            let chunk = try socket.receive()
            guard !chunk.isEmpty else { throw TestError("the connection closed after \(answers.count) answers") }
            bytes += chunk
        }
        return answers
    }

    func field(_ name: String, of answer: String) -> String? {
        answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    /// A read of an unchanged subject sends the response made for the first read again, with only the
    /// request id changed (`QuickResponses`): on connections whose requests interleave, and pipelined on
    /// one, each answer names its own request. A change makes a new response. Ids of one length are
    /// written over the kept one; the odd passes' are longer, which replaces the field.
    @Test func aKeptAnswerCarriesEachRequestsOwnIDAndFollowsChanges() throws {
        let herald = try TestHerald(examples: true)
        defer { herald.stop() }
        let sockets = try (0..<4).map { _ in try Socket(port: herald.port, timeout: 5) }
        func read(_ id: String) -> String { "GET /auctions/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-ID: \(id)\r\n\r\n" }
        let made = herald.herald.quickResponseCount
        var bodies: Set<Substring> = []
        for round in 0..<2 {
            if round == 1 {
                #expect(try herald.client().post("/auctions/1/bids", #"{"bidder":"ann","amount":500}"#).status == 201)
            }
            for pass in 0..<5 {
                let tail = "-\(round)-\(pass)" + (pass % 2 == 1 ? "-longer" : "")
                // Every connection's request is sent before any answer is read, and one connection
                // sends two at once.
                for (index, socket) in sockets.enumerated() { try socket.send(read("c\(index)\(tail)")) }
                try sockets[0].send(read("p1\(tail)") + read("p2\(tail)"))
                for (index, socket) in sockets.enumerated() {
                    let ids = index == 0 ? ["c0", "p1", "p2"] : ["c\(index)"]
                    let answers = try answers(ids.count, from: socket)
                    for (id, answer) in zip(ids, answers) {
                        #expect(answer.hasPrefix("HTTP/1.1 200 "))
                        #expect(field("X-Request-ID", of: answer) == id + tail, "\(answer)")
                        #expect(answer.contains(round == 0 ? #""price":100,"# : #""price":500,"#), "\(answer)")
                        bodies.insert(answer.split(separator: "\r\n\r\n")[1])
                    }
                }
            }
            // The whole round's 30 reads were sent one response, made for its first.
            #expect(herald.herald.quickResponseCount - made == round + 1)
        }
        #expect(bodies.count == 2)
    }
}
