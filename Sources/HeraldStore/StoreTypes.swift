import Foundation

/// Why the store cannot do what it was asked: said plainly, for the log and the exit message.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

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

/// A domain record to write (`document`) or delete (`document == nil`).
public struct RecordChange: Sendable, Equatable {
    public let kind: String
    public let id: String
    public let document: [UInt8]?

    public init(kind: String, id: String, document: [UInt8]?) {
        self.kind = kind
        self.id = id
        self.document = document
    }
}

/// What a store holds at start.
public struct StoredState: Sendable {
    /// The last sequence number ever given out (never reused, even when its event is pruned).
    public var lastSequence: UInt64 = 0
    /// The newest events, oldest first.
    public var events: [StoredEvent] = []
    /// Records by kind, each by id.
    public var records: [String: [(id: String, document: [UInt8])]] = [:]

    public init() {}
}

/// How hard a commit insists on the disk.
public enum Synchronous: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: a commit survives the process crashing; a power cut may lose the
    /// last commits (never corrupts).
    case normal
    /// `synchronous=FULL`: every commit is on the disk before it is acknowledged.
    case full
}
