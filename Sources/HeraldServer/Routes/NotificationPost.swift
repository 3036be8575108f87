import HeraldDomain
import HeraldJSON

/// A named message with a payload, for whoever observes that name. It has no state.
struct NotificationPost: Sendable, Equatable {
    let name: String
    let object: String?
    let userInfo: JSONValue

    static func topic(_ name: String) -> String { "notifications/\(name)" }

    init(name: String, json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        if !Topic.isNotificationName(name) { reader.fail("name", "must be 1 to 100 characters of A-Z, a-z, 0-9, ., _ and -") }
        let object = reader.string("object", required: false, length: 1...200)
        let userInfo = reader.object("userInfo")
        try reader.finish()
        self.name = name
        self.object = object
        self.userInfo = userInfo ?? [:]
    }

    /// The change to publish; `object:` tags let an observer keep only one object's posts.
    func entry(postedAt: String) -> Journal.Entry {
        Journal.Entry(topic: Self.topic(name), event: .notification,
                      payload: ["name": .string(name), "object": .optional(object), "userInfo": userInfo, "postedAt": .string(postedAt)],
                      tags: object.map { ["object:\($0)"] } ?? [])
    }
}
