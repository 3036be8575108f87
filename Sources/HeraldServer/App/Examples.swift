import Foundation
import HeraldDomain

extension Subjects {
    /// The example data an empty store starts with (`--examples`, on by default): an auction, a trip and
    /// a unit, so a first `curl` has something to show.
    func createExamples(in batch: ChangeBatch) throws(DomainError) {
        _ = try auctions.create(NewAuction(item: "Antique pocket watch", countdownSeconds: 7, startingPrice: 100), in: batch)
        let date = { (text: String) in Timestamp.parse(text) ?? .now }
        _ = try trips.create(NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                                     actualDeparture: date("2015-10-09T13:14:53Z")), in: batch)
        _ = try store(UnitKind.self)?.put(HeraldDomain.Unit(id: "scout", name: "Scout", status: .healthy), in: batch)
    }
}
