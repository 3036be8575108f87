import Foundation

/// One Server-Sent Event as a client sees it.
public struct SSEEvent: Sendable, Equatable {
    public var id: String?
    public var event: String?
    public var data: String

    public init(id: String?, event: String?, data: String) {
        self.id = id
        self.event = event
        self.data = data
    }

    /// `data` parsed as a JSON object.
    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
    }

    public static func == (lhs: SSEEvent, rhs: SSEEvent) -> Bool {
        lhs.id == rhs.id && lhs.event == rhs.event && lhs.data == rhs.data
    }
}
