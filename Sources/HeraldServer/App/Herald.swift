import Foundation
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import Logging

/// The Herald server: the domain's subjects, the observer hub that fans their changes out, and the
/// HTTP routes in front of them.
public final class Herald: Sendable {
    public let configuration: HeraldConfiguration
    public let hub: Hub
    public let auctions: AuctionHouse
    public let currency: CurrencySetting
    public let trips: TripBoard
    public let units: UnitStore
    private let server: HTTPServer
    private let logger: Logger
    private let startedAt = ContinuousClock.now

    public init(configuration: HeraldConfiguration, logger: Logger, clock: any DomainClock = SystemClock()) {
        self.configuration = configuration
        self.logger = logger
        let hub = Hub(historyLimit: configuration.history)
        let sink = HubSink(hub: hub)
        self.hub = hub
        auctions = AuctionHouse(clock: clock, sink: sink)
        currency = CurrencySetting(sink: sink)
        trips = TripBoard(sink: sink)
        units = UnitStore(sink: sink)

        let router = Self.router(hub: hub, sink: sink, auctions: auctions, currency: currency, trips: trips, units: units,
                                 queueLimit: configuration.observerQueueLimit, startedAt: startedAt)
        let cors = CORS(origin: configuration.corsOrigin, router: router)
        server = HTTPServer(configuration: configuration.http, logger: logger) { request in cors.respond(to: request) }
        if configuration.examples { createExamples() }
    }

    /// The port Herald listens on, once started.
    public var port: Int { server.port }

    /// Open SSE connections.
    public var streamCount: Int { server.streamCount }

    public func start() throws {
        try server.start()
        logger.info("herald listening", metadata: ["http.host": "\(configuration.http.host)", "http.port": "\(port)"])
    }

    /// Stops timers, ends every stream cleanly and stops listening.
    public func stop() {
        auctions.stop()
        server.stop()
        hub.endAll()
        logger.info("herald stopped")
    }

    private static func router(hub: Hub, sink: HubSink, auctions: AuctionHouse, currency: CurrencySetting, trips: TripBoard,
                               units: UnitStore, queueLimit: Int, startedAt: ContinuousClock.Instant) -> Router {
        let events = EventRoutes(hub: hub, queueLimit: queueLimit) { topic in
            let parts = topic.split(separator: "/", maxSplits: 1).map(String.init)
            switch (parts.first, parts.count) {
            case ("currency", 1), ("units", 1): return true
            case ("auctions", 2): return auctions.exists(parts[1])
            case ("trips", 2): return trips.exists(parts[1])
            case ("units", 2): return units.exists(parts[1])
            case ("notifications", 2): return NotificationPost.isValidName(parts[1])
            default: return false
            }
        }
        var routes = Routes()
        routes.addAuctions(auctions, events: events)
        routes.addCurrency(currency, events: events)
        routes.addTrips(trips, events: events)
        routes.addUnits(units, events: events)
        routes.addNotifications(sink, events: events)
        routes.add("GET", "/events") { request in try events.streamMany(request) }
        routes.add("GET", "/health") { _ in
            .json([
                "status": "ok", "observers": .integer(hub.observerCount), "subjects": .integer(hub.subjects.count),
                "lastEventId": .string(String(hub.lastEventId)),
                "uptimeSeconds": .integer(Int(startedAt.duration(to: .now).components.seconds)),
            ])
        }
        routes.add("GET", "/subjects") { _ in
            .json(["subjects": .array(hub.subjects.map {
                ["topic": .string($0.topic), "observers": .integer($0.observers), "lastEventId": .string(String($0.lastEventId))]
            })])
        }
        routes.add("GET", "/openapi.yaml") { _ in .text(OpenAPIDocument.yaml, contentType: "application/yaml") }
        return routes.router
    }

    private func createExamples() {
        _ = auctions.create(NewAuction(item: "Antique pocket watch", countdownSeconds: 7, startingPrice: 100))
        let date = { (text: String) in Timestamp.parse(text) ?? .now }
        _ = trips.create(NewTrip(departure: date("2015-10-09T13:09:53Z"), arrival: date("2015-10-09T13:26:33Z"),
                                 actualDeparture: date("2015-10-09T13:14:53Z")))
        _ = try? units.put(id: "scout", json: ["name": "Scout", "status": "healthy"])
    }
}
