import Synchronization

/// A unit of the data store: something with a name and a health status.
public struct Unit: Sendable, Equatable {
    public enum Status: String, Sendable, CaseIterable {
        case healthy, wounded, dead
    }

    public let id: String
    public var name: String
    public var status: Status

    public init(id: String, name: String, status: Status) {
        self.id = id
        self.name = name
        self.status = status
    }

    /// Whether `id` is 1–64 characters of letters, digits, `_` and `-`.
    public static func isValidId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }
}
