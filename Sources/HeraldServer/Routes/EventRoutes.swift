import Foundation
import HTTPTypes
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON

/// Opens SSE streams: checks the subjects, works out where the observer starts and what it keeps.
struct EventRoutes: Sendable {
    let hub: Hub
    let queueLimit: Int
    let access: Access
    /// Whether a topic names a subject that exists (unknown auctions, trips and units are 404), or
    /// could never name one (400).
    let check: @Sendable (String) -> TopicStatus

    enum TopicStatus {
        case exists
        case unknown
        /// Not the form of any subject's topic (`currency/`, `/currency`, `units/`): no event could ever come.
        case malformed
    }

    /// Most subjects one connection may observe.
    static let maxTopics = 64

    func stream(_ request: Request, topics: [String]) throws -> Response {
        // Who asks comes first: without a token, whether a subject exists is not told.
        let expires = try access.watcher(request, topics: topics)
        for topic in topics {
            switch check(topic) {
            case .exists: continue
            case .unknown: throw Problem(status: .notFound, detail: "no subject '\(RequestGuard.printable(topic))'")
            case .malformed:
                throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(topic))' is not a topic: topics are currency, units, "
                              + "auctions/{id}, trips/{id}, units/{id} and notifications/{name}")
            }
        }
        let subscription = hub.subscribe(to: topics, resume: try resumePoint(request), queueLimit: queueLimit,
                                         filter: try filter(request))
        // A trip stream's display strings follow `?locale=` and Accept-Language, as GET does.
        let locale = request.locale
        let localized = topics.contains { if case .trip = Topic($0) { true } else { false } } && locale.identifier != Trip.eventLocale.identifier
        return .eventStream(SubscriptionFeed(subscription, localizer: localized ? TripLocalizer(locale: locale) : nil, expires: expires))
    }

    /// `GET /events?topic=…&topic=…`.
    func streamMany(_ request: Request) throws -> Response {
        // A topic named twice is observed once.
        var seen = Set<String>()
        let topics = request.queryValues("topic").filter { seen.insert($0).inserted }
        guard !topics.isEmpty else { throw Problem(status: .badRequest, detail: "name at least one subject: /events?topic=currency&topic=auctions/1") }
        guard topics.count <= Self.maxTopics else { throw Problem(status: .badRequest, detail: "at most \(Self.maxTopics) topics per stream") }
        return try stream(request, topics: topics)
    }

    /// Trip fields `?fields=` may name.
    static let tripFields: Set<String> = ["actualDeparture", "delay", "delayed"]

    /// `Last-Event-ID` (header, or `lastEventId` for a first connection), else the snapshot choice.
    private func resumePoint(_ request: Request) throws -> ResumePoint {
        if let last = request.header(.lastEventID) ?? request.query("lastEventId") {
            let digits = last.trimmingSpacesAndTabs
            guard digits.isASCIIDigits, let id = UInt64(digits) else { return .unknown }
            return .after(id)
        }
        switch request.query("snapshot") {
        case nil, "true", "1": return .now(snapshot: true)
        case "false", "0": return .now(snapshot: false)
        case let other?: throw Problem(status: .badRequest, detail: "snapshot must be true or false, not '\(other)'")
        }
    }

    /// `?fields=` keeps only trip changes touching those fields; `?object=` only that object's notifications.
    private func filter(_ request: Request) throws -> (@Sendable (Event) -> Bool)? {
        let fields = Set(request.queryValues("fields").flatMap { $0.split(separator: ",").map { $0.trimmingSpacesAndTabs } }.filter { !$0.isEmpty })
        if let unknown = fields.subtracting(Self.tripFields).sorted().first {
            throw Problem(status: .badRequest, detail: "unknown field '\(unknown)': fields are \(Self.tripFields.sorted().joined(separator: ", "))")
        }
        let object = request.query("object").map { "object:\($0)" }
        guard !fields.isEmpty || object != nil else { return nil }
        return { event in
            if event.name == .trip, !fields.isEmpty { return event.tags.contains(where: fields.contains) }
            if event.name == .notification, let object { return event.tags.contains(object) }
            return true
        }
    }
}
