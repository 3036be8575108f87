import Foundation

/// One SSE subscriber's parser: HTTP head, chunked framing, then SSE fields, byte by byte, without
/// building strings for events it does not need.
struct Subscriber {
    enum Phase { case connecting, head, chunkSize, chunkData(Int), chunkEnd, closed }

    let fd: Int32
    var phase = Phase.connecting
    var status = 0
    var gotSnapshot = false
    /// The amount of the last bid seen (bids carry amounts 1, 2, 3 … in publishing order).
    var lastAmount = 0
    var lastId: UInt64 = 0
    var received = 0
    var lost = 0
    var duplicated = 0
    var outOfOrder = 0
    private var pending: [UInt8] = []
    private var line: [UInt8] = []
    private var eventName: [UInt8] = []
    private var eventId: UInt64 = 0
    private var amount = -1

    init(fd: Int32) { self.fd = fd }

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
            phase = .chunkSize
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
                for offset in index..<(index + take) { sse(bytes[offset], onBid: onBid) }
                index += take
                phase = left - take == 0 ? .chunkEnd : .chunkData(left - take)
            case .chunkEnd:
                if bytes[index] == 10 { phase = .chunkSize }
                index += 1
            case .closed, .connecting, .head:
                return
            }
        }
    }

    private mutating func sse(_ byte: UInt8, onBid: (Int) -> Void) {
        guard byte == 10 else {
            line.append(byte)
            return
        }
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            dispatch(onBid: onBid)
        } else if line.starts(with: Self.event) {
            eventName = Array(line[Self.event.count...])
        } else if line.starts(with: Self.id) {
            eventId = UInt64(String(decoding: line[Self.id.count...], as: UTF8.self)) ?? 0
        } else if line.starts(with: Self.data), eventName == Self.bid, let at = find(line, Self.amountKey) {
            var value = 0
            var position = at + Self.amountKey.count
            while position < line.count, line[position] >= 48, line[position] <= 57 {
                value = value * 10 + Int(line[position] - 48)
                position += 1
            }
            amount = value
        }
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
        if eventName == Self.snapshot { gotSnapshot = true }
        guard eventName == Self.bid, amount >= 0 else { return }
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
    static let snapshot = Array("snapshot".utf8)
    static let amountKey = Array("\"amount\":".utf8)
}
