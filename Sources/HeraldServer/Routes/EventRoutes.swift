import Foundation
import HTTPTypes
import HeraldAuth
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON

/// Opens SSE streams: checks the subjects, works out where the observer starts and what it keeps.
struct EventRoutes: Sendable {
    let hub: Hub
    let queueLimit: Int
    let access: Access
    /// The leases of the streams opened with a token, for their renewal.
    let leases: StreamLeases
    /// Who watches what: every stream counts on its topics.
    let presence: Presence
    /// Whether a topic names a subject that exists (unknown auctions, trips and units are 404), or
    /// could never name one (400).
    let check: @Sendable (NamedTopic) -> TopicStatus

    enum TopicStatus {
        case exists
        /// A unit not made yet (or removed): it may be observed, and its snapshot says it is absent.
        case absent
        case unknown
        /// Not the form of any subject's topic (`currency/`, `/currency`, `units/`): no event could ever come.
        case malformed
    }

    /// Most subjects one connection may observe.
    static let maxTopics = 64

    func stream(_ request: Request, topics: [String], filters: [String: CollectionFilter] = [:]) throws -> Response {
        // Who asks comes first: without a token, whether a subject exists is not told.
        let named = topics.map(NamedTopic.init)
        let token = try access.watcher(request, topics: named)
        let absentTopics = try checkTopics(named)
        // Every stream of the same subjects holds one array of them: they name subjects that exist, or may.
        let topics = hub.kept(topics)
        let (resume, eventFilter, added) = (try resumePoint(request), try filter(request, topics: topics), try added(request, topics))
        // A trip stream's display strings follow `?locale=` and Accept-Language, and `?timeZone=`, as GET
        // does. (Read only then: a Locale costs more than the rest of the head.)
        let style = named.contains { switch $0.topic { case .trip, .trips: true; default: false } } ? try request.displayStyle() : nil
        let localizer = style.flatMap { $0.isEvents ? nil : TripLocalizer(style: $0) }
        // A presence subject starts with its state, on every connection: its events are not kept.
        // Frames written as they are may come packed: a reconnect storm's replay is made once.
        // A unit (any keyed record) not made yet starts with a snapshot that says so (`"unit": null`), kept only while
        // observed: made-up ids cost what their streams cost, and nothing once they close.
        let absent = absentTopics.compactMap { topic in Registry.absentValue(of: topic).map { Hub.Update(topic: topic, value: $0) } }
        let subscription = presence.subscribing(topics) { values in
            hub.subscribe(to: topics, collections: filters, resume: resume, queueLimit: queueLimit, filter: eventFilter,
                          added: added.union(values.map(\.topic)), values: values, defaults: absent, packedReplay: localizer == nil)
        }
        // A stream with a token is told its id and end (`stream`), and can be renewed before it ends.
        let lease = token.map { leases.open(token: $0, topics: topics, client: request.client) }
        return .eventStream(SubscriptionFeed(subscription, localizer: localizer,
                                             lease: lease, leases: leases, presence: presence.opened(topics, subject: token?.subject)))
    }

    /// `GET /presence?topic=T`: who watches T now. Needs what watching `presence/T` needs.
    func presenceAnswer(_ request: Request) throws -> Response {
        let named = request.queryValues("topic")
        guard named.count == 1, let topic = named.first, !topic.isEmpty else {
            throw Problem(status: .badRequest, detail: "name one topic: /presence?topic=auctions/1")
        }
        let presenceTopic = NamedTopic(Presence.prefix + topic)
        _ = try access.watcher(request, topics: [presenceTopic])
        try checkTopics([presenceTopic])
        return .json(presence.answer(topic), headers: [.cacheControl: "no-store"])
    }

    /// 404 for a topic naming no subject, 400 for one that could name none.
    /// Throws 404 for a subject that does not exist and 400 for what is no topic; returns the units
    /// not made yet among them (which may be observed).
    @discardableResult
    func checkTopics(_ topics: [NamedTopic]) throws -> [String] {
        var absent: [String] = []
        for named in topics {
            switch check(named) {
            case .exists: continue
            case .absent: absent.append(named.text)
            case .unknown: throw Problem(status: .notFound, detail: "no subject '\(RequestGuard.printable(named.text))'")
            case .malformed:
                throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(named.text))' is not a topic: topics are \(Registry.topicForms)")
            }
        }
        return absent
    }

    /// `GET /events?topic=…&topic=…`.
    func streamMany(_ request: Request) throws -> Response {
        let (topics, filters) = try Self.topics(request)
        return try stream(request, topics: topics, filters: filters)
    }

    /// The topics `?topic=` names, each once, and the filters of the collections among them
    /// (`topic=auctions;status=open`, `topic=units;status=wounded,dead`).
    static func topics(_ request: Request) throws -> (topics: [String], filters: [String: CollectionFilter]) {
        var topics: [String] = [], filters: [String: CollectionFilter] = [:]
        for named in request.queryValues("topic") {
            var parts = named.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            let topic = parts.removeFirst()
            var fields: [(String, String)] = []
            for part in parts {
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else {
                    throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(part))' is not a filter: write field=value, "
                                  + "as in topic=auctions;status=open")
                }
                fields.append((pair[0], pair[1]))
            }
            let filter = try collectionFilter(topic, fields)
            if topics.contains(topic) {
                // A topic named twice is observed once; a collection named with two filters is a mistake.
                guard filters[topic] == filter else {
                    throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(topic))' is named with two filters; name it once")
                }
                continue
            }
            topics.append(topic)
            if let filter { filters[topic] = filter }
        }
        guard !topics.isEmpty else { throw Problem(status: .badRequest, detail: "name at least one subject: /events?topic=currency&topic=auctions/1") }
        guard topics.count <= maxTopics else { throw Problem(status: .badRequest, detail: "at most \(maxTopics) topics per stream") }
        return (topics, filters)
    }

    /// What each collection's members may be filtered by, and the values each field takes.
    static let collectionFields: [String: [String: [String]]] = Dictionary(
        uniqueKeysWithValues: CollectionKind.allCases.map { ($0.topic, $0.filterFields) })

    /// The filter `fields` (name and comma-separated values) make for `topic`: nil for none, 400 for a
    /// field the topic has not, a value the field never takes, or a filter on a topic that is no collection.
    static func collectionFilter(_ topic: String, _ fields: [(String, String)]) throws -> CollectionFilter? {
        guard !fields.isEmpty else { return nil }
        guard let known = collectionFields[topic] else {
            throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(topic))' is not a collection: only auctions, trips and units take filters")
        }
        var filter: [String: Set<String>] = [:]
        for (field, text) in fields {
            guard let values = known[field] else {
                throw Problem(status: .badRequest, detail: "\(topic) cannot be filtered by '\(RequestGuard.printable(field))': "
                              + "it can by \(known.keys.sorted().joined(separator: ", "))")
            }
            let named = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpacesAndTabs }
            if let wrong = named.first(where: { !values.contains($0) }) ?? (named.isEmpty ? "" : nil) {
                throw Problem(status: .badRequest, detail: "\(field) must be \(values.joined(separator: ", ")) (or several, comma-separated), "
                              + "not '\(RequestGuard.printable(wrong))'")
            }
            guard filter[field] == nil else { throw Problem(status: .badRequest, detail: "\(field) is named twice; list its values once, comma-separated") }
            filter[field] = Set(named)
        }
        return CollectionFilter(filter)
    }

    /// The filter the query gives the collection `topic` by its fields (`?status=wounded,dead`, a field
    /// named twice counting as one list): nil for none, 400 as `collectionFilter` says.
    static func queryFilter(_ request: Request, _ topic: String) throws -> CollectionFilter? {
        let fields = (collectionFields[topic] ?? [:]).keys.sorted().compactMap { field -> (String, String)? in
            let values = request.queryValues(field)
            return values.isEmpty ? nil : (field, values.joined(separator: ","))
        }
        return try collectionFilter(topic, fields)
    }

    /// `GET /auctions/events?status=…` and the like: a collection, filtered by its fields in the query.
    func streamCollection(_ request: Request, _ topic: String) throws -> Response {
        try Self.refuseUnknownParameters(request, of: topic, known: Self.streamParameters)
        let filter = try Self.queryFilter(request, topic)
        return try stream(request, topics: [topic], filters: filter.map { [topic: $0] } ?? [:])
    }

    /// What a stream's query may hold besides a collection's filter fields.
    static let streamParameters: Set<String> = ["snapshot", "lastEventId", "access_token", "fields", "object", "locale", "timeZone", "added"]
    /// What a list's query may hold besides its filter fields.
    static let listParameters: Set<String> = ["limit", "after", "locale", "timeZone", "access_token"]

    /// 400 for a query parameter of a collection's list or stream that is neither one of its filter
    /// fields nor one of `known`: ignored, a misspelt or foreign filter would answer the whole collection.
    static func refuseUnknownParameters(_ request: Request, of topic: String, known: Set<String>) throws {
        let fields = (collectionFields[topic] ?? [:]).keys.sorted()
        guard let unknown = request.query.first(where: { !known.contains($0.name) && !fields.contains($0.name) })?.name else { return }
        throw Problem(status: .badRequest, detail: "\(topic) cannot be filtered by '\(RequestGuard.printable(unknown))': its filter fields are "
                      + fields.joined(separator: ", ") + ", and the other parameters it takes are " + known.sorted().joined(separator: ", "))
    }

    /// `?added=T` (each a topic of the stream, bare or with its filter): topics new to a resumed stream,
    /// which start with a snapshot instead of a replay (a browser's shared stream taking another tab's
    /// topics). Without `Last-Event-ID` every topic starts with a snapshot anyway.
    private func added(_ request: Request, _ topics: [String]) throws -> Set<String> {
        var added: Set<String> = []
        for named in request.queryValues("added") {
            let topic = String(named.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
            guard topics.contains(topic) else {
                throw Problem(status: .badRequest, detail: "added names '\(RequestGuard.printable(named))', which is not a topic of this stream")
            }
            added.insert(topic)
        }
        return added
    }

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

    /// `?fields=` keeps only changes touching those fields (`price`: the bids, not the ticks); `?object=`
    /// only that object's notifications. A field is its subject's: `status` on a stream of an auction and
    /// a unit filters both, `price` only the auction's events, and the unit's pass as they are.
    func filter(_ request: Request, topics: [String]) throws -> (@Sendable (Event) -> Bool)? {
        let named = Set(request.queryValues("fields").flatMap { $0.split(separator: ",").map { $0.trimmingSpacesAndTabs } }.filter { !$0.isEmpty })
        var wanted: [EventName: Set<String>] = [:]
        if !named.isEmpty {
            let subjects = ChangedFields.subjects(of: topics)
            let known = subjects.reduce(into: Set<String>()) { $0.formUnion($1.fields) }
            if let unknown = named.subtracting(known).sorted().first {
                let choices = subjects.map { "\($0.name): \($0.fields.sorted().joined(separator: ", "))" }
                throw Problem(status: .badRequest, detail: "unknown field '\(RequestGuard.printable(unknown))': "
                              + (choices.isEmpty ? "fields filter the changes of auctions, trips and units, and this stream has none"
                                                 : "the fields of this stream's subjects are " + choices.joined(separator: "; ")))
            }
            for subject in subjects where !subject.fields.isDisjoint(with: named) {
                for name in subject.events { wanted[name] = subject.fields.intersection(named) }
            }
        }
        let object = request.query("object").map { "object:\($0)" }
        guard !wanted.isEmpty || object != nil else { return nil }
        return { [wanted] event in
            if let fields = wanted[event.name] { return event.tags.contains(where: fields.contains) }
            if event.name == .notification, let object { return event.tags.contains(object) }
            return true
        }
    }
}
