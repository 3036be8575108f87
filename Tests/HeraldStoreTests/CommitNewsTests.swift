import Foundation
@testable import HeraldStore
import Testing

/// A batch's news as the notifications carry it (`CommitNews`): written as the batch stores its
/// changes, cut into payloads under PostgreSQL's 8,000 bytes, and read back whole.
struct CommitNewsTests {
    let auction: StoredAuction = {
        var auction = StoredAuction(id: "12", item: "Clock ⏰", startingPrice: 10, currency: "euro", createdAt: "2026-11-27T06:00:00Z", status: "open",
                                    countdownSeconds: 30, deadline: "2026-11-27T06:00:31Z", winner: nil, closedAt: nil)
        auction.bidCount = 4
        return auction
    }()

    func event(_ id: UInt64, _ text: String) -> StoredEvent {
        StoredEvent(id: id, topic: "units/\(id)", name: "unit", data: Array(#"{"text":"\#(text)"}"#.utf8), tags: ["is:kind=a", "b\nc"],
                    at: Date(timeIntervalSince1970: 1_764_230_400.123456))
    }

    /// Reads payloads as the listener gets them, in any order of their parts.
    func read(_ payloads: [String]) throws -> CommitNews {
        var parts: [Int: Substring] = [:]
        var revision: Int64 = -1
        for payload in payloads.reversed() {
            let header = try #require(CommitNews.header(payload))
            let part = try #require(header.part)
            #expect(part.count == payloads.count)
            revision = header.revision
            parts[part.index] = part.body
        }
        var body: [UInt8] = []
        for index in 0..<payloads.count { body.append(contentsOf: Array((parts[index] ?? "").utf8)) }
        // Not `#require` on the call: a failure would print every byte of the body.
        let news = CommitNews(revision: revision, body: body)
        try #require(news != nil, "the news reads back")
        return try #require(news)
    }

    @Test func aBatchsNewsReadsBackAsItWasStoredAcrossPartsCutBetweenCharacters() throws {
        var writer = CommitNews.Writer()
        // Enough text of 1-, 2-, 3- and 4-byte characters for several parts, so that cuts fall inside them.
        let long = String(repeating: "aé€😀", count: 900)
        writer.add(event: event(7, long), records: [RecordChange(kind: "unit", id: "7", document: Array(long.utf8)),
                                                     RecordChange(kind: "unit", id: "old", document: nil)], auction: nil, bid: nil)
        var second = auction
        second.bidCount = 5
        writer.add(event: event(8, "bid"), records: [], auction: auction,
                   bid: StoredBid(number: 4, bidder: "ann", amount: 20, at: "2026-11-27T06:00:01Z"))
        writer.add(event: event(9, "bid"), records: [], auction: second,
                   bid: StoredBid(number: 5, bidder: "bob ☃", amount: 21, at: "2026-11-27T06:00:02Z"))
        let payloads = writer.payloads(revision: 41)
        #expect(payloads.count > 2, "several parts: \(payloads.count)")
        #expect(payloads.allSatisfy { $0.utf8.count < 8_000 }, "each under PostgreSQL's limit")
        #expect(payloads.enumerated().allSatisfy { $1.hasPrefix("41.\($0).\(payloads.count)|") })

        let news = try read(payloads)
        #expect(news.revision == 41)
        #expect(news.events == [event(7, long), event(8, "bid"), event(9, "bid")], "bytes, tags and time as stored")
        #expect(news.changes.changed.records["unit"]?.map(\.id) == ["7"])
        #expect(news.changes.changed.records["unit"]?.first?.document == Array(long.utf8))
        #expect(news.changes.removed.map(\.id) == ["old"])
        let read = try #require(news.changes.changed.auctions.first)
        #expect(news.changes.changed.auctions.count == 1, "one auction, as the batch left it")
        #expect(read.bidCount == 5)
        #expect(read.bids.map(\.bidder) == ["ann", "bob ☃"], "with every bid the batch added, in order")
        #expect(read.bids.map(\.number) == [4, 5])
        #expect(read.item == "Clock ⏰" && read.deadline == "2026-11-27T06:00:31Z" && read.winner == nil && read.closedAt == nil)
    }

    /// What cannot go as text, or would take too many notifications, goes as the revision alone (the
    /// other replicas then read it back).
    @Test func whatCannotBeCarriedGoesAsTheRevisionAlone() {
        var binary = CommitNews.Writer()
        binary.add(event: StoredEvent(id: 1, topic: "t", name: "n", data: [0x7B, 0xFF, 0x7D], tags: [], at: Date()), records: [],
                   auction: nil, bid: nil)
        #expect(binary.payloads(revision: 3) == ["3"], "bytes that are not UTF-8")
        var nul = CommitNews.Writer()
        nul.add(event: nil, records: [RecordChange(kind: "unit", id: "a", document: [0x22, 0, 0x22])], auction: nil, bid: nil)
        #expect(nul.payloads(revision: 4) == ["4"], "a NUL byte")
        var huge = CommitNews.Writer()
        for index in 0..<20 {
            huge.add(event: nil, records: [RecordChange(kind: "unit", id: "\(index)", document: Array(String(repeating: "x", count: 7_000).utf8))],
                     auction: nil, bid: nil)
        }
        #expect(huge.payloads(revision: 5) == ["5"], "more than \(CommitNews.maximumParts) parts")
        var uncounted = CommitNews.Writer()
        var auction = auction
        auction.bidCount = nil
        uncounted.add(event: nil, records: [], auction: auction, bid: nil)
        #expect(uncounted.payloads(revision: 6) == ["6"], "an auction without its count of bids")
        #expect(CommitNews.Writer().payloads(revision: 7) == ["7.0.1|"], "a batch that changed nothing carried has empty news")
        #expect(CommitNews.header("7")?.revision == 7 && CommitNews.header("7")?.part == nil)
        #expect(CommitNews.header("7.2.2|x") == nil, "a part beyond the count")
        #expect(CommitNews.header("x.0.1|") == nil)
        #expect(CommitNews(revision: 1, body: Array("E3:abc".utf8)) == nil, "an entry cut short")
        #expect(CommitNews(revision: 1, body: Array("Q".utf8)) == nil, "an unknown entry")
    }

    /// The news of several revisions in a row, taken in at once: the last change of each record
    /// counts, and an auction's bids add up.
    @Test func newsOfRevisionsInARowJoinsAsTheirLastChanges() throws {
        func news(_ revision: Int64, _ build: (inout CommitNews.Writer) -> Void) throws -> CommitNews {
            var writer = CommitNews.Writer()
            build(&writer)
            return try read(writer.payloads(revision: revision))
        }
        var counted = auction
        counted.bidCount = 5
        let first = try news(10) {
            $0.add(event: event(1, "a"), records: [RecordChange(kind: "unit", id: "a", document: Array("1".utf8)),
                                                   RecordChange(kind: "unit", id: "b", document: nil)], auction: auction,
                   bid: StoredBid(number: 4, bidder: "ann", amount: 20, at: "t1"))
        }
        let second = try news(11) {
            $0.add(event: event(2, "b"), records: [RecordChange(kind: "unit", id: "a", document: nil),
                                                   RecordChange(kind: "unit", id: "b", document: Array("2".utf8))], auction: counted,
                   bid: StoredBid(number: 5, bidder: "bob", amount: 21, at: "t2"))
        }
        let joined = first.joined(with: second)
        #expect(joined.revision == 11)
        #expect(joined.events.map(\.id) == [1, 2])
        #expect(joined.changes.changed.records["unit"]?.map(\.id) == ["b"], "b was made again")
        #expect(joined.changes.removed.map(\.id) == ["a"], "a was removed last")
        #expect(joined.changes.changed.auctions.first?.bids.map(\.number) == [4, 5])
        #expect(joined.changes.changed.auctions.first?.bidCount == 5)
    }
}
