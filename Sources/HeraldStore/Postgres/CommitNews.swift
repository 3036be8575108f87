import Foundation

/// What one replica's batch committed, carried in its commit's notifications (`PostgresStore`), so
/// that the other replicas take it in as soon as it is heard of, without reading it back and without
/// the write lock: its events, and the records, removals, auctions and bids it changed.
///
/// A batch's news is text in the notifications' payloads, each under PostgreSQL's 8,000 bytes:
/// `REVISION.PART.PARTS|` and a part of the body, cut between characters. A batch too large for
/// `maximumParts`, or with bytes that are not UTF-8 text, is notified with its revision alone, as
/// before: then the replicas read what it changed, as they do for any revision whose news they missed.
///
/// The body is one entry after another: a letter, then fields, each its length in bytes, `:` and its
/// bytes, or `-` for none.
/// - `E` an event: id, topic, name, data, tags, time
/// - `R` a record: kind, id, document (none: removed)
/// - `A` an auction: id, item, starting price, created, status, countdown seconds, deadline, winner,
///   closed, its count of bids
/// - `B` a bid of the auction before it: number, bidder, amount, time
public struct CommitNews: Sendable {
    /// The revision the batch committed.
    public let revision: Int64
    /// The events, in id order.
    public var events: [StoredEvent] = []
    /// What the batch changed, as `StoredChanges` from the catch-up reads would hold it: each auction
    /// with the bids the batch added and its count of bids.
    public var changes = StoredChanges()

    /// The most parts a batch's news takes (then about 120 KB); a larger batch is read back instead.
    static let maximumParts = 16
    /// The body's bytes in one part (the header and PostgreSQL's own limit leave room).
    static let partBytes = 7_700

    /// The news of a batch, written as its changes are stored.
    struct Writer {
        private(set) var body: [UInt8] = []
        /// False once something could not be written as text; then the batch is read back.
        private(set) var carried = true

        mutating func reset() {
            body.removeAll(keepingCapacity: true)
            carried = true
        }

        mutating func add(event: StoredEvent?, records: [RecordChange], auction: StoredAuction?, bid: StoredBid?) {
            guard carried else { return }
            if let event {
                body.append(UInt8(ascii: "E"))
                field(String(event.id))
                field(event.topic)
                field(event.name)
                field(bytes: event.data)
                field(bytes: SQLiteStore.tagsText(event.tags))
                field(String(event.at.timeIntervalSince1970))
            }
            for record in records {
                body.append(UInt8(ascii: "R"))
                field(record.kind)
                field(record.id)
                if let document = record.document { field(bytes: document) } else { body.append(UInt8(ascii: "-")) }
            }
            if let auction {
                body.append(UInt8(ascii: "A"))
                field(auction.id)
                field(auction.item)
                field(String(auction.startingPrice))
                field(auction.createdAt)
                field(auction.status)
                field(String(auction.countdownSeconds))
                optional(auction.deadline)
                optional(auction.winner)
                optional(auction.closedAt)
                field(auction.currency)
                // A memory that cannot tell the count reads the batch back.
                guard let count = auction.bidCount else { carried = false; return }
                field(String(count))
                if let bid {
                    body.append(UInt8(ascii: "B"))
                    field(String(bid.number))
                    field(bid.bidder)
                    field(String(bid.amount))
                    field(bid.at)
                }
            }
            if body.count > CommitNews.maximumParts * CommitNews.partBytes { carried = false }
        }

        private mutating func field(_ text: String) { field(bytes: Array(text.utf8)) }

        private mutating func optional(_ text: String?) {
            if let text { field(text) } else { body.append(UInt8(ascii: "-")) }
        }

        private mutating func field<Bytes: Collection<UInt8>>(bytes: Bytes) {
            // PostgreSQL's text holds neither a NUL byte nor bytes that are not UTF-8.
            if bytes.contains(0) || String(validating: bytes, as: UTF8.self) == nil { carried = false }
            body.append(contentsOf: String(bytes.count).utf8)
            body.append(UInt8(ascii: ":"))
            body.append(contentsOf: bytes)
        }

        /// The payloads of the batch's notifications: its news in parts, or its revision alone.
        func payloads(revision: Int64) -> [String] {
            guard carried else { return [String(revision)] }
            var parts: [ArraySlice<UInt8>] = []
            var start = 0
            while start < body.count || parts.isEmpty {
                var end = min(start + CommitNews.partBytes, body.count)
                // Between characters: never before a continuation byte (10xxxxxx).
                while end < body.count, end > start, body[end] & 0xC0 == 0x80 { end -= 1 }
                parts.append(body[start..<end])
                start = end
            }
            guard parts.count <= CommitNews.maximumParts else { return [String(revision)] }
            return parts.enumerated().map { index, part in
                "\(revision).\(index).\(parts.count)|" + String(decoding: part, as: UTF8.self)
            }
        }
    }

    /// A payload's revision, and its part of the news if it carries one.
    typealias Header = (revision: Int64, part: (index: Int, count: Int, body: Substring)?)

    /// The header of `payload`; nil when it does not read.
    static func header(_ payload: String) -> Header? {
        guard let bar = payload.firstIndex(of: "|") else { return Int64(payload).map { ($0, nil) } }
        let numbers = payload[..<bar].split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 3, let revision = Int64(numbers[0]), let index = Int(numbers[1]), let count = Int(numbers[2]),
              count >= 1, count <= maximumParts, index >= 0, index < count else { return nil }
        return (revision, (index, count, payload[payload.index(after: bar)...]))
    }

    init(revision: Int64) {
        self.revision = revision
    }

    /// The news in `body`; nil when it does not read (then the batch is read back).
    init?(revision: Int64, body: [UInt8]) {
        self.init(revision: revision)
        var reader = Reader(body: body)
        var records: [String: [(id: String, document: [UInt8])]] = [:]
        var removed: [(kind: String, id: String)] = []
        var auctions: [StoredAuction] = []
        var lastAuction: Int?
        while let letter = reader.letter() {
            switch letter {
            case UInt8(ascii: "E"):
                guard let id = reader.text().flatMap({ UInt64($0) }), let topic = reader.text(), let name = reader.text(),
                      let data = reader.bytes(), let tags = reader.text(), let at = reader.text().flatMap({ Double($0) }) else { return nil }
                events.append(StoredEvent(id: id, topic: topic, name: name, data: data, tags: SQLiteStore.tags(from: tags),
                                          at: Date(timeIntervalSince1970: at)))
            case UInt8(ascii: "R"):
                guard let kind = reader.text(), let id = reader.text(), let document = reader.optionalBytes() else { return nil }
                Self.record(kind, id, document, in: &records, removed: &removed)
            case UInt8(ascii: "A"):
                guard let id = reader.text(), let item = reader.text(), let price = reader.text().flatMap({ Int64($0) }),
                      let createdAt = reader.text(), let status = reader.text(), let seconds = reader.text().flatMap({ Int($0) }),
                      let deadline = reader.optionalText(), let winner = reader.optionalText(), let closedAt = reader.optionalText(),
                      let currency = reader.text(), let count = reader.text().flatMap({ Int($0) }) else { return nil }
                var auction = StoredAuction(id: id, item: item, startingPrice: price, currency: currency, createdAt: createdAt, status: status,
                                            countdownSeconds: seconds, deadline: deadline, winner: winner, closedAt: closedAt)
                auction.bidCount = count
                lastAuction = Self.add(auction, to: &auctions)
            case UInt8(ascii: "B"):
                // A bid follows its auction.
                guard let number = reader.text().flatMap({ Int($0) }), let bidder = reader.text(),
                      let amount = reader.text().flatMap({ Int64($0) }), let at = reader.text(), let index = lastAuction else { return nil }
                auctions[index].bids.append(StoredBid(number: number, bidder: bidder, amount: amount, at: at))
            default:
                return nil
            }
        }
        guard reader.atEnd else { return nil }
        changes.changed.records = records
        changes.removed = removed
        changes.changed.auctions = Self.inIDOrder(auctions)
    }

    /// A record's change, folded into what came before it: the last change of each record counts (a
    /// removal after a write removes it, and the reverse).
    private static func record(_ kind: String, _ id: String, _ document: [UInt8]?,
                               in records: inout [String: [(id: String, document: [UInt8])]], removed: inout [(kind: String, id: String)]) {
        records[kind]?.removeAll { $0.id == id }
        removed.removeAll { $0.kind == kind && $0.id == id }
        if let document { records[kind, default: []].append((id, document)) } else { removed.append((kind, id)) }
    }

    /// An auction's row, folded into what came before it: the auction as it was left last, with every
    /// bid added to it before and with it. Returns its place.
    private static func add(_ auction: StoredAuction, to auctions: inout [StoredAuction]) -> Int {
        guard let index = auctions.firstIndex(where: { $0.id == auction.id }) else {
            auctions.append(auction)
            return auctions.count - 1
        }
        var latest = auction
        latest.bids = auctions[index].bids + auction.bids
        auctions[index] = latest
        return index
    }

    /// In id order, as the reads give them (length, then text).
    private static func inIDOrder(_ auctions: [StoredAuction]) -> [StoredAuction] {
        auctions.sorted { ($0.id.utf8.count, $0.id) < ($1.id.utf8.count, $1.id) }
    }

    /// This news and the next revision's: what the two batches changed, as one.
    func joined(with next: CommitNews) -> CommitNews {
        var joined = CommitNews(revision: next.revision)
        joined.events = events + next.events
        var records = changes.changed.records
        var removed = changes.removed
        // Each record is either written or removed in a batch's news, so the order of the two lists
        // does not matter.
        for entry in next.changes.removed { Self.record(entry.kind, entry.id, nil, in: &records, removed: &removed) }
        for (kind, entries) in next.changes.changed.records {
            for entry in entries { Self.record(kind, entry.id, entry.document, in: &records, removed: &removed) }
        }
        var auctions = changes.changed.auctions
        for auction in next.changes.changed.auctions { _ = Self.add(auction, to: &auctions) }
        joined.changes.changed.records = records
        joined.changes.removed = removed
        joined.changes.changed.auctions = Self.inIDOrder(auctions)
        return joined
    }

    /// Reads a body's entries and fields.
    private struct Reader {
        let body: [UInt8]
        var position = 0

        var atEnd: Bool { position == body.count }

        mutating func letter() -> UInt8? {
            guard position < body.count else { return nil }
            defer { position += 1 }
            return body[position]
        }

        mutating func bytes() -> [UInt8]? { range().map { Array(body[$0]) } }

        /// Where the next field's bytes are, and past them.
        private mutating func range() -> Range<Int>? {
            var length = 0
            while position < body.count, body[position] != UInt8(ascii: ":") {
                let digit = body[position]
                guard digit >= 0x30, digit <= 0x39, length < 1 << 40 else { return nil }
                length = length * 10 + Int(digit - 0x30)
                position += 1
            }
            guard position < body.count, position + 1 + length <= body.count else { return nil }
            position += 1
            defer { position += length }
            return position..<(position + length)
        }

        mutating func text() -> String? { range().map { String(decoding: body[$0], as: UTF8.self) } }

        /// A field that may be none (`-`): nil when it does not read, `.some(nil)` when it is none.
        mutating func optionalBytes() -> [UInt8]?? {
            if position < body.count, body[position] == UInt8(ascii: "-") {
                position += 1
                return .some(nil)
            }
            return bytes().map { .some($0) }
        }

        mutating func optionalText() -> String?? {
            optionalBytes().map { $0.map { String(decoding: $0, as: UTF8.self) } }
        }
    }
}
