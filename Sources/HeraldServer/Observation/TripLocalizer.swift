import Foundation
import HeraldCore
import HeraldDomain
import HeraldHTTP
import HeraldJSON

/// Re-renders trip events for a stream that asked for another locale or time zone. Events are encoded
/// once, with display strings in `DisplayStyle.events`; a stream in German gets its trip snapshots and
/// changes rewritten with German strings, and every other event as it is. Only such streams pay for it.
final class TripLocalizer: Sendable {
    // A class: a stream's feed keeps a reference (8 bytes), not the style (33), in every stream's feed,
    // though few streams have one.
    let style: DisplayStyle

    init(style: DisplayStyle) { self.style = style }

    /// The frame for `event` in this locale, or nil to send the shared one.
    func frame(for event: Event) -> [UInt8]? {
        // The name first: only a snapshot or a trip's change is rewritten, and most events are neither.
        // Only trips' topics publish `trip`, and `trips` is the one snapshot of many trips: the name and
        // the topic's bytes tell which, with no topic parsed for each event.
        guard event.name == .snapshot || event.name == .trip else { return nil }
        if event.name == .snapshot, event.topic == TripBoard.collectionTopic { return collectionFrame(for: event) }
        guard event.name == .trip || event.topic.utf8.starts(with: Self.tripPrefix),
              case .object(let members)? = try? JSONValue.parse(event.data),
              let trip = members.first(where: { $0.0 == "trip" }).flatMap({ Trip(document: $0.1) })
        else { return nil }
        let localized = JSONValue.object(members.map { $0.0 == "trip" ? ("trip", trip.json(style: style)) : $0 })
        return SSEEncoder.encode(SSEMessage(id: String(event.id), event: event.name.text, data: localized.bytes))
    }

    private static let tripPrefix = Array((TripBoard.collectionTopic + "/").utf8)

    /// A `trips` snapshot with each trip's strings in this locale.
    private func collectionFrame(for event: Event) -> [UInt8]? {
        guard case .object(let members)? = try? JSONValue.parse(event.data) else { return nil }
        let localized = JSONValue.object(members.map { name, value in
            guard name == "trips", case .array(let trips) = value else { return (name, value) }
            return (name, .array(trips.map { Trip(document: $0)?.json(style: style) ?? $0 }))
        })
        return SSEEncoder.encode(SSEMessage(id: String(event.id), event: event.name.text, data: localized.bytes))
    }

}
