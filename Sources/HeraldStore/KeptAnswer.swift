public import Foundation
import HeraldJSON

/// The answer to a change made with an `Idempotency-Key`, kept so that a retry gets it again instead
/// of making the change twice.
public struct KeptAnswer: Sendable, Equatable {
    /// The client's key, scoped to who sent it (a token's subject, when there is a key).
    public let key: String
    /// What the request was (method, path and a digest of its body): the same key with another
    /// request is refused.
    public let fingerprint: String
    public let status: Int
    /// The headers worth giving again (`Location`, `Content-Type`), as name and value.
    public let headers: [[String]]
    public let body: [UInt8]
    public let at: Date

    /// How long an answer is kept: a day, as clients retry within minutes.
    public static let keptSeconds: Double = 86_400

    /// Headers as stored: a JSON array of [name, value] pairs.
    static func encode(_ headers: [[String]]) -> String {
        JSONValue.array(headers.map { .array($0.map { .string($0) }) }).serialized
    }

    static func decode(_ text: String) -> [[String]] {
        guard case .array(let pairs)? = try? JSONValue.parse(Array(text.utf8)) else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let items) = pair else { return nil }
            let strings = items.compactMap(\.stringValue)
            return strings.count == 2 ? strings : nil
        }
    }

    public init(key: String, fingerprint: String, status: Int, headers: [[String]], body: [UInt8], at: Date) {
        self.key = key
        self.fingerprint = fingerprint
        self.status = status
        self.headers = headers
        self.body = body
        self.at = at
    }
}
