import Synchronization

/// A unit of the data store: something with a name and a health status.
public struct Unit: KeyedRecord {
    public static let collection = "units"
    public static let noun = "unit"

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
}
