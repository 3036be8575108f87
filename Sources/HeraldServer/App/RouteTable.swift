import HTTPTypes
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import Logging

/// Every route Herald serves, in one place: the subjects', the streams' and the service's own.
enum RouteTable {
    static func router(subjects: Subjects, hub: Hub, journal: Journal, access: Access, leases: StreamLeases,
                       forwarding: RenewalForwarding?, revoking: Revoking, presence: Presence, queueLimit: Int,
                       startedAt: ContinuousClock.Instant, health: Health, scrape: (@Sendable () -> [UInt8])?,
                       logger: Logger) -> (router: Router, quickReads: [(pattern: String, read: QuickReads.Read)]) {
        let events = EventRoutes(hub: hub, queueLimit: queueLimit, access: access, leases: leases, presence: presence) { status(of: $0, in: subjects) }
        var routes = Routes(logger: logger, journal: journal, access: access)
        routes.addAuctions(subjects.auctions, currency: subjects.currency, events: events)
        routes.addCurrency(subjects.currency, events: events)
        routes.addTrips(subjects.trips, events: events)
        for kind in Registry.keyed { kind.addRoutes(&routes, from: subjects, events: events) }
        routes.addNotifications(journal, events: events)
        routes.add(.get, "/events") { request in try events.streamMany(request) }
        routes.add(.get, "/presence") { request in try events.presenceAnswer(request) }
        let renewals = Renewals(access: access, leases: leases, forwarding: forwarding)
        routes.add(.post, AccessLog.renewalRoute) { request in try renewals.renew(request) }
        let admin = StreamAdmin(access: access, leases: leases)
        routes.add(.get, "/streams") { request in try admin.list(request) }
        routes.add(.delete, AccessLog.streamRoute) { request in try admin.end(request) }
        routes.add(.get, "/revocations") { request in try revoking.list(request) }
        routes.add(.post, "/revocations") { request in try revoking.revoke(request) }
        let changes = Changes(events: events)
        routes.add(.get, "/changes") { request in try changes.answer(request) }
        routes.add(.get, "/health") { _ in
            .json([
                "status": "ok", "version": .string(HeraldVersion.current), "observers": .integer(hub.observerCount),
                "subjects": .integer(hub.subjects.count),
                "lastEventId": .string(String(hub.lastEventId)),
                "uptimeSeconds": .integer(Int(startedAt.duration(to: .now).components.seconds)),
            ], headers: [.cacheControl: "no-store"])
        }
        health.add(to: &routes)
        if let scrape { routes.add(.get, "/metrics") { _ in Metrics.response(scrape()) } }
        routes.add(.get, "/subjects") { request in
            let visible = try access.visibleTopics(request)
            let all = hub.subjects
            let shown = visible.map { visible in all.filter { visible($0.topic) } } ?? all
            return .json([
                "subjects": .array(shown.map {
                    ["topic": .string($0.topic), "observers": .integer($0.observers), "lastEventId": .string(String($0.lastEventId))]
                }),
                "totals": ["subjects": .integer(all.count), "observers": .integer(all.reduce(0) { $0 + $1.observers })],
            ], headers: [.cacheControl: "no-store"])
        }
        routes.addPage()
        return (routes.router, routes.quickReads)
    }

    /// Whether a stream's topic names something: a subject that exists, one that does not (404), or no
    /// topic Herald has (400).
    static func status(of named: NamedTopic, in subjects: Subjects) -> EventRoutes.TopicStatus {
        if let watched = Presence.watched(named.text) {
            // `presence/T` is there when T is (never `presence/presence/…`).
            return Presence.watched(watched) == nil ? status(of: NamedTopic(watched), in: subjects) : .malformed
        }
        let known: Bool
        switch named.topic {
        case .currency, .auctions, .trips, .keyed, .notification: return .exists
        case .auction(let id): known = AuctionID(id).map(subjects.auctions.exists) ?? false
        case .trip(let id): known = TripID(id).map(subjects.trips.exists) ?? false
        case .record(let collection, let id): return subjects.keyed[collection]?.exists(id) == true ? .exists : .absent
        case nil: return .malformed
        }
        return known ? .exists : .unknown
    }
}
