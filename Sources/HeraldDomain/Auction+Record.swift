import Foundation
import HeraldJSON

extension Auction {
    public static let recordKind = "auction"

    /// Everything about the auction, its bids and its countdown deadline: what a restart restores.
    public var record: Record {
        Record(kind: Self.recordKind, id: id, document: [
            "id": .string(id), "item": .string(item), "startingPrice": .int(startingPrice),
            "createdAt": Timestamp.json(createdAt), "status": .string(status.rawValue),
            "countdownSeconds": .integer(countdown.seconds), "deadline": Timestamp.json(countdown.deadline),
            "winner": .optional(winner), "closedAt": Timestamp.json(closedAt), "bids": .array(bids.map(\.json)),
        ])
    }

    /// Restores an auction from its record.
    public init(record document: JSONValue) throws(DomainError) {
        let unreadable = DomainError(.invalid, "a stored auction is unreadable: \(document.serialized.prefix(200))")
        guard let id = document["id"]?.stringValue, let item = document["item"]?.stringValue,
              let startingPrice = document["startingPrice"]?.intValue,
              let createdAt = document["createdAt"]?.stringValue.flatMap(Timestamp.parse),
              let status = document["status"]?.stringValue.flatMap(Status.init(rawValue:)),
              let seconds = document["countdownSeconds"]?.intValue,
              case .array(let storedBids)? = document["bids"]
        else { throw unreadable }
        self.init(id: id, item: item, countdownSeconds: Int(seconds), startingPrice: startingPrice, createdAt: createdAt)
        for stored in storedBids {
            guard let bidId = stored["id"]?.stringValue, let bidder = stored["bidder"]?.stringValue,
                  let amount = stored["amount"]?.intValue, let at = stored["at"]?.stringValue.flatMap(Timestamp.parse)
            else { throw unreadable }
            bids.append(Bid(id: bidId, bidder: bidder, amount: amount, at: at))
        }
        self.status = status
        winner = document["winner"]?.stringValue
        closedAt = document["closedAt"]?.stringValue.flatMap(Timestamp.parse)
        countdown = Countdown(seconds: Int(seconds), deadline: document["deadline"]?.stringValue.flatMap(Timestamp.parse))
    }
}
