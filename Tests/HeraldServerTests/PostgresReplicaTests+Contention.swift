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
        let streams = try servers.map { try $0.stream("/events?\(topics)&snapshot=false") }
        let ports = servers.map(\.port)
        let amount = Atomic<Int>(1)
        let until = Date().addingTimeInterval(10)
        // Each client's acknowledged bids: (auction, bidder), in the order it sent them.
        let acknowledged = Racers.run(6) { racer -> [(auction: String, bidder: String)] in
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
            return taken
        }.compactMap { $0 }.flatMap { $0 }
        #expect(acknowledged.count > 100, "the replicas took bids: \(acknowledged.count)")
        // What each took in of the others' commits came from their news, not from reading it back.
        let fromNews = servers.map { ($0.herald.journal.store as? PostgresStore)?.revisionsTakenFromNews ?? 0 }
        #expect(fromNews.allSatisfy { $0 > 10 }, "revisions taken from news on each replica: \(fromNews)")
        var orders: [[String]] = []
        for (index, stream) in streams.enumerated() {
            var ids: [String] = []
            var bids = 0
            var lastBidder: [String: String] = [:]
            var winners: [String: [String?]] = [:]
            while winners.count < auctions.count || winners.values.contains(where: { $0.count != 1 }) {
                guard let event = try? stream.next(timeout: 30) else { break }
                guard let id = event.id else { continue }
                ids.append(id)
                let auction = (event.json["auction"] as? [String: Any])?["id"] as? String ?? ""
                if event.event == "bid" {
                    bids += 1
                    lastBidder[auction] = (event.json["bid"] as? [String: Any])?["bidder"] as? String
                } else if event.event == "closed" {
                    winners[auction, default: []].append(event.json["winner"] as? String)
                }
            }
            #expect(bids == acknowledged.count, "replica \(index): one bid event for each acknowledged bid")
            #expect(Set(winners.keys) == Set(auctions), "replica \(index): every auction closed")
            for auction in auctions {
                #expect(winners[auction] == [lastBidder[auction]], "replica \(index), auction \(auction): one close, won by its last bidder")
            }
            orders.append(ids)
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
}
