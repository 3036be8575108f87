import Synchronization

/// Makes request ids: a prefix random per process and a counter, so ids from two runs never meet in
/// one log and making one costs an atomic increment.
final class RequestIDs: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        prefix = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
    }

    func next() -> String {
        let number = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(number, radix: 16)
    }
}
