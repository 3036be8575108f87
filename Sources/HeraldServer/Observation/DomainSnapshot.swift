import HeraldDomain
import HeraldJSON
import HeraldStore

/// What the store holds, read into domain values: what the domain restores at start, and reloads
/// after a batch the store refused. A record that does not read stops the start with a message.
struct DomainSnapshot {
    var currency: Currency?
    var trips: [Trip] = []
    /// Each keyed kind's records, by collection (`units`).
    var records: [String: [any KeyedRecord]] = [:]
    var auctions: [Auction] = []
    /// Each auction's count of bids in all, when the stored auctions hold only the bids missed.
    var bidCounts: [AuctionID: Int]?

    init(_ stored: StoredState) throws(StoreError) {
        for (kind, entries) in stored.records {
            for entry in entries {
                let document: JSONValue
                do {
                    document = try JSONValue.parse(entry.document)
                } catch {
                    throw StoreError("the stored \(kind) '\(entry.id)' is not JSON (\(error.reason)): restore the data directory from a backup")
                }
                let unreadable = StoreError("the stored \(kind) '\(entry.id)' is unreadable: restore the data directory from a backup")
                switch kind {
                case Journal.RecordKind.trip:
                    guard let trip = Trip(document: document) else { throw unreadable }
                    trips.append(trip)
                case Journal.RecordKind.currency:
                    guard let currency = document["default"]?.stringValue.flatMap(Currency.init(rawValue:)) else { throw unreadable }
                    self.currency = currency
                default:
                    guard let keyed = Registry.keyedKind(storedAs: kind) else { continue }  // a kind this build does not know is kept, not read
                    guard let record = keyed.read(document: document) else { throw unreadable }
                    records[keyed.collection, default: []].append(record)
                }
            }
        }
        var counts: [AuctionID: Int] = [:]
        for row in stored.auctions {
            guard let auction = Journal.auction(row) else {
                throw StoreError("the stored auction '\(row.id)' is unreadable: restore the data directory from a backup")
            }
            auctions.append(auction)
            if let count = row.bidCount { counts[auction.id] = count }
        }
        if !counts.isEmpty { bidCounts = counts }
    }
}
