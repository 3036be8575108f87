public import Foundation

/// One event of a Herald stream, typed. `id` is the global sequence number (nil for events Herald
/// never numbers: ticks, presence, and the stream's own lease events); `topic` names the subject.
public struct HeraldEvent: Sendable, Hashable {
    /// A subject's current value: the first event for each topic of a new stream, and again after
    /// `resync`. A collection's comes in frames of about 8 KiB, `more` on all but the last.
    public enum Snapshot: Sendable, Hashable {
        case auction(Auction)
        case currency(CurrencySetting)
        case trip(Trip)
        case unit(HeraldUnit)
        /// A unit that does not exist (not made yet, or removed): its `unit` event comes when it is made.
        case absentUnit(id: String)
        case presence(Presence)
        case notification(HeraldNotification)
        case auctions([Auction], more: Bool)
        case trips([Trip], more: Bool)
        case units([HeraldUnit], more: Bool)
        /// A subject this client has no model for.
        case other(JSON)
    }

    /// Every event Herald sends, by its SSE `event:` name.
    public enum Kind: Sendable, Hashable {
        case snapshot(Snapshot)
        /// `bid`: an accepted bid and the auction after it.
        case bid(BidResult)
        /// `closed`: the auction after its countdown ended.
        case closed(Auction)
        /// `tick`: a second of an auction's countdown (never numbered or replayed).
        case tick(Tick)
        /// `auction`: a member of an auction collection entered it or changed (new, bid or closed).
        case auction(Auction)
        /// `currency`: the default currency changed.
        case currency(Currency, previous: Currency?)
        /// `trip`: a trip was created or its times changed; `changed` names what moved.
        case trip(Trip, changed: [String])
        /// `unit`: a unit was created or replaced.
        case unit(HeraldUnit, created: Bool)
        /// `removed`: the unit the stream watches was deleted.
        case removed(id: String)
        /// `left`: a member of a filtered collection stopped matching or was removed.
        case left(id: String)
        case notification(HeraldNotification)
        /// Presence (`presence/T`): a user's first stream opened.
        case joined(user: String)
        /// Presence: a user's last stream closed and their grace passed.
        case userLeft(user: String)
        /// Presence: the number of streams watching changed (at most once a second).
        case watchers(Int)
        /// The stream's resume point was older than the history kept: snapshots follow.
        case resync(lastEventID: String)
        /// Where a stream with nothing else to send first starts (its `id:` too). `HeraldClient` does not
        /// deliver it: it only moves the position a reconnect resumes from.
        case ready(lastEventID: String)
        /// The stream's lease: its id and end, for renewal.
        case stream(StreamLease)
        case tokenExpiring(StreamLease)
        /// The token ran out and was not renewed; the client reconnects with a fresh one.
        case expired(StreamLease)
        /// An event this version of the client does not know, with its data.
        case other(name: String, data: JSON)
    }

    public var id: String?
    public var topic: String
    public var kind: Kind

    public init(id: String?, topic: String, kind: Kind) {
        self.id = id
        self.topic = topic
        self.kind = kind
    }
}

extension HeraldEvent {
    /// Decodes one event from its SSE name and JSON data (as `/events` sends them, or as an entry of
    /// `/changes`'s `events`). Throws when the data does not have the name's documented shape.
    public init(id: String?, name: String, data: Data) throws {
        self = try Self.decode(id: id, name: name, data: data, with: JSONDecoder())
    }

    /// Decodes every event of a `text/event-stream` body: a recorded stream, or a fixture.
    public static func decode(eventStream text: String) throws -> [HeraldEvent] {
        var decoder = SSEDecoder()
        var wire: [ServerSentEvent] = []
        decoder.feed(Data(text.utf8)) { wire.append($0) }
        let json = JSONDecoder()
        return try wire.map { try decode(id: $0.id, name: $0.name, data: Data($0.data.utf8), with: json) }
    }

    /// Decodes the data of an event called `name`. An event whose data does not have its documented
    /// shape throws: that is a server this client does not match, not an event to skip silently.
    static func decode(id: String?, name: String, data: Data, with decoder: JSONDecoder) throws -> HeraldEvent {
        let topic = (try? decoder.decode(TopicField.self, from: data))?.topic ?? ""
        func value<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(T.self, from: data) }
        let kind: Kind
        switch name {
        case "snapshot": kind = .snapshot(try snapshot(topic: topic, data: data, decoder: decoder))
        case "bid": kind = .bid(try value(BidResult.self))
        case "closed": kind = .closed(try value(AuctionField.self).auction)
        case "tick": kind = .tick(try value(Tick.self))
        case "auction": kind = .auction(try value(AuctionField.self).auction)
        case "currency":
            let change = try value(CurrencyChange.self)
            kind = .currency(change.default, previous: change.previous)
        case "trip":
            let change = try value(TripChange.self)
            kind = .trip(change.trip, changed: change.changed ?? [])
        case "unit":
            let change = try value(UnitChange.self)
            kind = .unit(change.unit, created: change.created ?? false)
        case "removed": kind = .removed(id: try value(IDField.self).id)
        case "left" where topic.hasPrefix("presence/"): kind = .userLeft(user: try value(UserField.self).sub)
        case "left": kind = .left(id: try value(IDField.self).id)
        case "notification": kind = .notification(try value(HeraldNotification.self))
        case "joined": kind = .joined(user: try value(UserField.self).sub)
        case "watchers": kind = .watchers(try value(Presence.self).watchers)
        case "resync": kind = .resync(lastEventID: try value(ResyncField.self).lastEventId)
        case "ready": kind = .ready(lastEventID: try value(ResyncField.self).lastEventId)
        case "stream": kind = .stream(try value(StreamLease.self))
        case "token-expiring": kind = .tokenExpiring(try value(StreamLease.self))
        case "expired": kind = .expired(try value(StreamLease.self))
        default: kind = .other(name: name, data: try value(JSON.self))
        }
        return HeraldEvent(id: id, topic: topic, kind: kind)
    }

    private static func snapshot(topic: String, data: Data, decoder: JSONDecoder) throws -> Snapshot {
        let collection = topic.split(separator: "/", maxSplits: 1).first.map(String.init) ?? topic
        let isMember = topic.contains("/")
        switch (collection, isMember) {
        case ("presence", _): return .presence(try decoder.decode(Presence.self, from: data))
        case ("auctions", true): return .auction(try decoder.decode(AuctionField.self, from: data).auction)
        case ("trips", true): return .trip(try decoder.decode(TripChange.self, from: data).trip)
        case ("units", true):
            if try decoder.decode(MaybeUnit.self, from: data).unit == nil { return .absentUnit(id: String(topic.dropFirst("units/".count))) }
            return .unit(try decoder.decode(UnitChange.self, from: data).unit)
        case ("notifications", true): return .notification(try decoder.decode(HeraldNotification.self, from: data))
        case ("currency", false): return .currency(try decoder.decode(CurrencySetting.self, from: data))
        case ("auctions", false):
            let frame = try decoder.decode(AuctionsFrame.self, from: data)
            return .auctions(frame.auctions, more: frame.more ?? false)
        case ("trips", false):
            let frame = try decoder.decode(TripsFrame.self, from: data)
            return .trips(frame.trips, more: frame.more ?? false)
        case ("units", false):
            let frame = try decoder.decode(UnitsFrame.self, from: data)
            return .units(frame.units, more: frame.more ?? false)
        default: return .other(try decoder.decode(JSON.self, from: data))
        }
    }

    private struct TopicField: Decodable { var topic: String }
    private struct IDField: Decodable { var id: String }
    private struct UserField: Decodable { var sub: String }
    private struct ResyncField: Decodable { var lastEventId: String }
    private struct AuctionField: Decodable { var auction: Auction }
    private struct CurrencyChange: Decodable { var `default`: Currency; var previous: Currency? }
    private struct TripChange: Decodable { var trip: Trip; var changed: [String]? }
    private struct UnitChange: Decodable { var unit: HeraldUnit; var created: Bool? }
    private struct MaybeUnit: Decodable { var unit: HeraldUnit? }
    private struct AuctionsFrame: Decodable { var auctions: [Auction]; var more: Bool? }
    private struct TripsFrame: Decodable { var trips: [Trip]; var more: Bool? }
    private struct UnitsFrame: Decodable { var units: [HeraldUnit]; var more: Bool? }
}
