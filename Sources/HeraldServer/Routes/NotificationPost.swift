import HeraldDomain
import HeraldJSON

/// A named message with a payload, for whoever observes that name. It has no state.
struct NotificationPost: Sendable, Equatable {
    let name: String
    let object: String?
    let userInfo: JSONValue

    static func topic(_ name: String) -> String { "notifications/\(name)" }

    /// Whether `name` is 1–100 characters of letters, digits, `.`, `_` and `-`, and not `.` or `..`
    /// (which no client can put in a path).
    static func isValidName(_ name: String) -> Bool {
        name != "." && name != ".." && (1...100).contains(name.utf8.count) && name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D || c == 0x2E
        }
    }

    init(name: String, json: JSONValue) throws(DomainError) {
        var reader = try FieldReader(json)
        if !Self.isValidName(name) { reader.fail("name", "must be 1 to 100 characters of A-Z, a-z, 0-9, ., _ and -") }
        let object = reader.string("object", required: false, length: 1...200)
        let userInfo = reader.object("userInfo")
        try reader.finish()
        self.name = name
        self.object = object
        self.userInfo = userInfo ?? [:]
    }

    /// The change to publish; `object:` tags let an observer keep only one object's posts.
    func entry(postedAt: String) -> Journal.Entry {
        Journal.Entry(topic: Self.topic(name), event: "notification",
                      payload: ["name": .string(name), "object": .optional(object), "userInfo": userInfo, "postedAt": .string(postedAt)],
                      tags: object.map { ["object:\($0)"] } ?? [])
    }
}
