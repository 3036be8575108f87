import Foundation

/// One SSE subscriber's parser: HTTP head, chunked framing, then SSE fields, byte by byte, without
/// building strings for events it does not need.
struct Subscriber {
    enum Phase { case connecting, head, chunkSize, chunkData(Int), chunkEnd, identity, closed }

    let fd: Int32
    var phase = Phase.connecting
    var status = 0
    var gotSnapshot = false
    /// The amount of the last bid seen (bids carry amounts 1, 2, 3 … in publishing order).
    var lastAmount = 0
    var lastId: UInt64 = 0
    /// The last `id:` as sent (nchan's are `seconds:tag`), for `Last-Event-ID`.
    var lastIdText: [UInt8] = []
    var received = 0
    var lost = 0
    var duplicated = 0
    var outOfOrder = 0
    /// `resync` events: a resume that found its id no longer kept.
    var resyncs = 0
    /// Whole snapshots received (a resume that replays gets none).
    var snapshots = 0
    /// A countdown's `tick` events received.
    var ticks = 0
    /// The connection's status line came (with any status).
    var answered: Bool { status != 0 }
    private var pending: [UInt8] = []
    private var line: [UInt8] = []
    private var eventName: [UInt8] = []
    private var eventId: UInt64 = 0
    private var amount = -1
    private var snapshotContinues = false

    /// Arrived at the first event of any kind, even nchan's `: hi` comment (for `--nchan-without-message`).
    let arrivesAtAnyEvent: Bool

    init(fd: Int32, arrivesAtAnyEvent: Bool = false) {
        self.fd = fd
        self.arrivesAtAnyEvent = arrivesAtAnyEvent
    }

    /// The same client on a new connection: what it saw is kept, the parser starts afresh.
    init(fd: Int32, resuming previous: Subscriber) {
        self.init(fd: fd, arrivesAtAnyEvent: previous.arrivesAtAnyEvent)
        (gotSnapshot, lastAmount, lastId, received) = (previous.gotSnapshot, previous.lastAmount, previous.lastId, previous.received)
        lastIdText = previous.lastIdText
        (lost, duplicated, outOfOrder, resyncs, snapshots) = (previous.lost, previous.duplicated, previous.outOfOrder, previous.resyncs, previous.snapshots)
        ticks = previous.ticks
    }

    /// Feeds received bytes; calls `onBid(amount)` for every bid event dispatched.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, onBid: (Int) -> Void) {
        var index = 0
        if case .head = phase {
            pending.append(contentsOf: bytes)
            guard let end = find(pending, [13, 10, 13, 10]) else { return }
            let head = String(decoding: pending[0..<end], as: UTF8.self)
            status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            let rest = Array(pending[(end + 4)...])
            pending = []
            // Herald frames a stream in chunks; nchan writes it as it is, until the connection closes.
            phase = head.lowercased().contains("transfer-encoding: chunked") ? .chunkSize : .identity
            rest.withUnsafeBytes { feed($0, onBid: onBid) }
            return
        }
        while index < bytes.count {
            switch phase {
            case .chunkSize:
                let byte = bytes[index]
                index += 1
                if byte == 10 {
                    let size = Int(String(decoding: pending.filter { $0 != 13 }, as: UTF8.self).split(separator: ";").first ?? "", radix: 16) ?? 0
                    pending.removeAll(keepingCapacity: true)
                    phase = size == 0 ? .closed : .chunkData(size)
                } else {
                    pending.append(byte)
                }
            case .chunkData(let left):
                let take = min(left, bytes.count - index)
                sse(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]), onBid: onBid)
                index += take
                phase = left - take == 0 ? .chunkEnd : .chunkData(left - take)
            case .chunkEnd:
                if bytes[index] == 10 { phase = .chunkSize }
                index += 1
            case .identity:
                sse(UnsafeRawBufferPointer(rebasing: bytes[index...]), onBid: onBid)
                return
            case .closed, .connecting, .head:
                return
            }
        }
    }

    /// Splits chunk data into lines (a line may span chunks) and handles each.
    private mutating func sse(_ bytes: UnsafeRawBufferPointer, onBid: (Int) -> Void) {
        var start = 0
        while start < bytes.count {
            guard let newline = bytes[start...].firstIndex(of: 10) else {
                line.append(contentsOf: bytes[start...])
                return
            }
            if line.isEmpty {
                handle(line: UnsafeRawBufferPointer(rebasing: bytes[start..<newline]), onBid: onBid)
            } else {
                line.append(contentsOf: bytes[start..<newline])
                let whole = line
                whole.withUnsafeBytes { handle(line: $0, onBid: onBid) }
                line.removeAll(keepingCapacity: true)
            }
            start = newline + 1
        }
    }

    private mutating func handle(line: UnsafeRawBufferPointer, onBid: (Int) -> Void) {
        if line.isEmpty {
            dispatch(onBid: onBid)
        } else if line.starts(with: Self.event) {
            eventName = Array(line[Self.event.count...])
        } else if line.starts(with: Self.id) {
            lastIdText = Array(line[Self.id.count...])
            // Herald's ids are numbers; nchan's are `seconds:tag`, of which the seconds are enough here.
            var value: UInt64 = 0
            for byte in line[Self.id.count...] {
                guard byte >= 48 && byte <= 57 else { break }
                value = value * 10 + UInt64(byte - 48)
            }
            eventId = value
        } else if line.starts(with: Self.data), eventName == Self.snapshot {
            // A large collection's snapshot comes in several events: it is whole at the one without more.
            snapshotContinues = Self.search(Self.more, in: line) != nil
        } else if line.starts(with: Self.data), eventName == Self.bid || eventName == Self.auction,
                  let found = Self.search(Self.amountKey, in: line) {
            var value = 0
            var position = found + Self.amountKey.count
            while position < line.count, line[position] >= 48, line[position] <= 57 {
                value = value * 10 + Int(line[position] - 48)
                position += 1
            }
            amount = value
        }
    }

    /// Where `key` first occurs in `bytes`.
    private static func search(_ key: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let first = key.first, bytes.count >= key.count else { return nil }
        var start = 0
        while let at = bytes[start...(bytes.count - key.count)].firstIndex(of: first) {
            if bytes[at..<(at + key.count)].elementsEqual(key) { return at }
            start = at + 1
            if start > bytes.count - key.count { return nil }
        }
        return nil
    }

    private mutating func dispatch(onBid: (Int) -> Void) {
        defer {
            eventName = []
            amount = -1
        }
        if eventId > 0 {
            if eventId < lastId { outOfOrder += 1 }
            lastId = max(lastId, eventId)
        }
        if eventName == Self.snapshot, !snapshotContinues {
            gotSnapshot = true
            snapshots += 1
        }
        if eventName == Self.resync { resyncs += 1 }
        if eventName == Self.tick { ticks += 1 }
        if arrivesAtAnyEvent { gotSnapshot = true }
        guard eventName == Self.bid || eventName == Self.auction, amount >= 0 else { return }
        if amount <= lastAmount {
            duplicated += 1
            return
        }
        if amount > lastAmount + 1 { lost += amount - lastAmount - 1 }
        lastAmount = amount
        received += 1
        onBid(amount)
    }

    static let event = Array("event: ".utf8)
    static let id = Array("id: ".utf8)
    static let data = Array("data: ".utf8)
    static let bid = Array("bid".utf8)
    /// A lobby's event for a member's change (a bid's, there).
    static let auction = Array("auction".utf8)
    static let more = Array("\"more\":true".utf8)
    static let snapshot = Array("snapshot".utf8)
    static let resync = Array("resync".utf8)
    static let tick = Array("tick".utf8)
    static let amountKey = Array("\"amount\":".utf8)
}
