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
