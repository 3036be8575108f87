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

    /// The client's `X-Request-ID` when it can name a request in a log line and a JSON string as it is
    /// (1 to 128 letters, digits and `-_.:/+=@`), else a new id.
    func id(for header: String?) -> String {
        if let header, Self.isUsable(header) { return header }
        return next()
    }

    static func isUsable(_ id: String) -> Bool {
        let bytes = id.utf8
        return (1...128).contains(bytes.count) && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || Self.punctuation.contains(byte)
        }
    }

    private static let punctuation = Set("-_.:/+=@".utf8)
}
