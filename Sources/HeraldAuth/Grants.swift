/// What a token may do: the topics it may publish to and subscribe to, as patterns; and, for an
/// administrator (`"admin": true`), see every open stream and end one.
public struct Grants: Codable, Sendable, Equatable {
    public var publish: [String]
    public var subscribe: [String]
    public var admin: Bool

    public init(publish: [String] = [], subscribe: [String] = [], admin: Bool = false) {
        self.publish = publish
        self.subscribe = subscribe
        self.admin = admin
    }

    private enum CodingKeys: String, CodingKey { case publish, subscribe, admin }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        publish = try container.decodeIfPresent([String].self, forKey: .publish) ?? []
        subscribe = try container.decodeIfPresent([String].self, forKey: .subscribe) ?? []
        admin = try container.decodeIfPresent(Bool.self, forKey: .admin) ?? false
    }

    /// `admin` only when true: a token of anyone else reads as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(publish, forKey: .publish)
        try container.encode(subscribe, forKey: .subscribe)
        if admin { try container.encode(true, forKey: .admin) }
    }

    public func mayPublish(_ topic: String) -> Bool { publish.contains { Self.matches($0, topic) } }

    public func maySubscribe(_ topic: String) -> Bool { subscribe.contains { Self.matches($0, topic) } }

    /// Whether the token may watch the collection `collection` (`auctions`): a pattern names it, or
    /// covers every member it could ever hold (`auctions/*`, `*`). `auctions/7` alone does not.
    public func maySubscribe(collection: String) -> Bool {
        subscribe.contains { pattern in
            Self.matches(pattern, collection) || (pattern.hasSuffix("*") && (collection + "/").hasPrefix(pattern.dropLast()))
        }
    }

    /// A pattern is a topic (`units/scout`, `currency`), or ends in `*` and then matches every topic
    /// that starts with what comes before it: `auctions/*`, `notifications/door.*`, and `*` for all.
    /// A `*` anywhere else is an ordinary character.
    public static func matches(_ pattern: String, _ topic: String) -> Bool {
        guard pattern.hasSuffix("*") else { return pattern == topic }
        return topic.hasPrefix(pattern.dropLast())
    }
}
