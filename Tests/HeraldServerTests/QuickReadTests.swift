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
}
