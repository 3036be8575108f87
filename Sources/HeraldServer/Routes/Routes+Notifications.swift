import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addNotifications(_ journal: Journal, events: EventRoutes) {
        write(.post, "/notifications/{name}", topic: "notifications/{name}") { request, _ in
            // A notification has no version: an `If-Match` cannot hold (RFC 9110 §13.1.1).
            try Preconditions(request).require(nil, "notification '\(RequestGuard.printable(request.parameter("name")))'")
            let post = try NotificationPost(name: request.parameter("name"), json: try request.json())
            return { batch throws(DomainError) in
                let id = try journal.post(post.entry(postedAt: Timestamp.format(journal.now)), in: batch)
                return .json(["id": .string(String(id ?? 0))], status: .accepted)
            }
        }
        add(.get, "/notifications/{name}/events") { request in
            let name = request.parameter("name")
            guard Topic.isNotificationName(name) else { throw Problem(status: .notFound, detail: "'\(name)' is not a notification name") }
            return try events.stream(request, topics: [NotificationPost.topic(name)])
        }
    }
}
