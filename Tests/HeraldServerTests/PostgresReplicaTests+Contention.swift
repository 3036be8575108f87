import Foundation
@testable import HeraldServer
@testable import HeraldStore
import HeraldTestSupport
import Synchronization
import Testing

/// Writes that contend across replicas (issue 30): what every replica's observers see when three
/// take bids on the same auctions at once.
extension PostgresReplicaTests {
    /// Three replicas take bids as fast as their clients send them, all to the same 10 auctions, for
    /// 10 s (two clients on each, amounts from one counter, so some are too low by the time they are
    /// taken). Every replica's observers then see the same ids in the same order, one bid event for
    /// each bid acknowledged anywhere, and one close of each auction, won by its last bidder.
    @Test func threeReplicasWritingAtOnceToTenAuctionsAgreeOnEverything() throws {
        let url = try TestPostgres.database()
        let servers = try replicas(url)
        defer { for server in servers { server.stop() } }
        let auctions = try (0..<10).map { _ in try servers[0].auction(countdown: 3, startingPrice: 1) }
        #expect(eventually { servers.allSatisfy { server in
            auctions.allSatisfy { (try? server.client().get("/auctions/\($0)").status) == 200 }
        } }, "the auctions reach every replica")
        let topics = auctions.map { "topic=auctions/\($0)" }.joined(separator: "&")
        let streams = Streams(try servers.map { try $0.stream("/events?\(topics)&snapshot=false") })
        let ports = servers.map(\.port)
        let amount = Atomic<Int>(1)
        let until = Date().addingTimeInterval(10)
        // Six clients bid (two on each replica) while one reader on each replica takes its observer's
        // events as they come. Read only after the bids, as before, a stream sat unread for 10 s and
        // more: its socket filled, and what came next depended on the kernel's buffers and TCP's window
        // probes as much as on Herald.
        let outcomes = Racers.run(6 + servers.count) { racer -> Outcome in
            if racer >= 6 { return .saw(Self.watch(streams.all[racer - 6], untilEachOf: auctions)) }
            var taken: [(auction: String, bidder: String)] = []
            var number = 0
            while Date() < until {
                number += 1
                let auction = auctions[(racer + number) % auctions.count]
                let bidder = "r\(racer)n\(number)"
                let bid = amount.add(1, ordering: .relaxed).newValue
                let status = try? HTTPClient(port: ports[racer % ports.count])
                    .post("/auctions/\(auction)/bids", #"{"bidder":"\#(bidder)","amount":\#(bid)}"#).status
                if status == 201 { taken.append((auction, bidder)) }
            }
            return .bid(taken)
        }
        // Each client's acknowledged bids: (auction, bidder), in the order it sent them.
        let acknowledged = outcomes.flatMap { outcome -> [(auction: String, bidder: String)] in
            if case .bid(let taken) = outcome { return taken }
            return []
        }
        let seen = outcomes.compactMap { outcome -> Seen? in
            if case .saw(let seen) = outcome { return seen }
            return nil
        }
        #expect(acknowledged.count > 100, "the replicas took bids: \(acknowledged.count)")
        #expect(seen.count == servers.count, "every reader came back")
        // What each took in of the others' commits came from their news, not from reading it back.
        let fromNews = servers.map { ($0.herald.journal.store as? PostgresStore)?.revisionsTakenFromNews ?? 0 }
        #expect(fromNews.allSatisfy { $0 > 10 }, "revisions taken from news on each replica: \(fromNews)")
        var orders: [[String]] = []
        for (index, seen) in seen.enumerated() {
            #expect(seen.ended == nil, "replica \(index): \(seen.ended ?? "")")
            #expect(seen.bids == acknowledged.count, "replica \(index): one bid event for each acknowledged bid")
            #expect(Set(seen.winners.keys) == Set(auctions), "replica \(index): every auction closed")
            for auction in auctions {
                #expect(seen.winners[auction] == [seen.lastBidder[auction]], "replica \(index), auction \(auction): one close, won by its last bidder")
            }
            orders.append(seen.ids)
        }
        #expect(orders.allSatisfy { $0 == orders[0] }, "the same ids in the same order on every replica")
        let ids = orders[0].compactMap { UInt64($0) }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count, "ids rise and none repeats")
        Thread.sleep(forTimeInterval: 3.5)  // a second close would come within a countdown's length
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_events WHERE name = 'closed'", on: url) == "10", "no auction closed twice")
        #expect(try TestPostgres.run("SELECT count(*) FROM herald_bids", on: url) == String(acknowledged.count),
                "the database holds each acknowledged bid, and no other")
        for server in servers {
            for auction in auctions {
                let read = try server.client().get("/auctions/\(auction)").json
                #expect(read["status"] as? String == "closed")
                #expect(read["bidCount"] as? Int == acknowledged.count { $0.auction == auction })
            }
        }
    }

    /// The three readers' streams, each read by one reader thread only.
    private final class Streams: @unchecked Sendable {
        let all: [SSEClient]
        init(_ all: [SSEClient]) { self.all = all }
    }

    /// What a racer of the contention test did: bid (its acknowledged bids) or watch (what its
    /// replica's observer saw).
    private enum Outcome: Sendable {
        case bid([(auction: String, bidder: String)])
        case saw(Seen)
    }

    /// What one replica's observer saw: every id in order, the bid events, each auction's last bidder,
    /// and the winners of its closes; `ended` says why reading stopped early, if it did.
    private struct Seen: Sendable {
        var ids: [String] = []
        var bids = 0
        var lastBidder: [String: String] = [:]
        var winners: [String: [String?]] = [:]
        var ended: String?
    }

    /// Reads `stream` until each of `auctions` has closed once (or 30 s pass without an event).
    private static func watch(_ stream: SSEClient, untilEachOf auctions: [String]) -> Seen {
        var seen = Seen()
        while seen.winners.count < auctions.count || seen.winners.values.contains(where: { $0.count != 1 }) {
            let event: SSEEvent
            do {
                event = try stream.next(timeout: 30)
            } catch {
                seen.ended = "no event for 30 s, or the stream ended, after \(seen.bids) bids: \(error)"
                break
            }
            guard let id = event.id else { continue }
            seen.ids.append(id)
            let auction = (event.json["auction"] as? [String: Any])?["id"] as? String ?? ""
            if event.event == "bid" {
                seen.bids += 1
                seen.lastBidder[auction] = (event.json["bid"] as? [String: Any])?["bidder"] as? String
            } else if event.event == "closed" {
                seen.winners[auction, default: []].append(event.json["winner"] as? String)
            }
        }
        return seen
    }
}
