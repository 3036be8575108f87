public import Foundation

/// An event as stored: the same bytes the observers get.
public struct StoredEvent: Sendable, Equatable {
    public let id: UInt64
    public let topic: String
    public let name: String
    public let data: [UInt8]
    public let tags: [String]
    public let at: Date

    public init(id: UInt64, topic: String, name: String, data: [UInt8], tags: [String], at: Date) {
        self.id = id
        self.topic = topic
        self.name = name
        self.data = data
        self.tags = tags
        self.at = at
    }
}
