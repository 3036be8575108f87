import HeraldThreads
import Synchronization

/// An auction's bids, in order. Bids are only ever appended, so every value of one auction shares one
/// storage and shows its first `count` bids: copying an auction to change it (as every bid does)
/// copies no bids, and a bid costs the same at bid 10 and at bid 10,000. A value that appends behind
/// another's back (the first was never written back, because its change could not be stored) gets a
/// storage of its own.
public struct BidList: RandomAccessCollection, Sendable {
    private final class Storage: Sendable {
        let bids: Lock<[Bid]>
        init(_ bids: [Bid]) { self.bids = Lock(bids) }
    }

    private var storage: Storage
    public private(set) var count: Int

    public init(_ bids: [Bid] = []) {
        storage = Storage(bids)
        count = bids.count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> Bid {
        precondition(position >= 0 && position < count, "bid index out of range")
        return storage.bids.withLock { $0[position] }
    }

    /// The last bid, read once.
    public var last: Bid? { count == 0 ? nil : self[count - 1] }

    mutating func append(_ bid: Bid) {
        let appended = storage.bids.withLock { bids -> Bool in
            guard bids.count == count else { return false }
            bids.append(bid)
            return true
        }
        if !appended {
            let mine = storage.bids.withLock { Array($0.prefix(count)) }
            storage = Storage(mine + [bid])
        }
        count += 1
    }
}
