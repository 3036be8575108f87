import Foundation
import HeraldDomain

/// How a trip's display strings are written: a language and a time zone.
struct DisplayStyle: Sendable {
    let locale: Locale
    let timeZone: TimeZone
    /// The zone's name as asked (Foundation may spell UTC as GMT).
    let zoneName: String

    init(locale: Locale, timeZone: TimeZone, zoneName: String? = nil) {
        self.locale = locale
        self.timeZone = timeZone
        self.zoneName = zoneName ?? (timeZone == .utc ? "UTC" : timeZone.identifier)
    }

    /// Events and snapshots carry strings in this style; `GET` and streams can ask for another.
    static let events = DisplayStyle(locale: Locale(identifier: "en_US"), timeZone: .utc)

    /// Whether strings in this style are the events' own.
    var isEvents: Bool { locale.identifier == Self.events.locale.identifier && zoneName == Self.events.zoneName }

    /// What an entity tag tells apart: the locale and the zone.
    var tag: String { locale.identifier + "|" + zoneName }
}

extension TimeZone {
    static let utc = TimeZone(identifier: "UTC") ?? .gmt
}

/// A trip's display strings in one style: date in short style, times in short style (in the style's
/// zone), duration short ("16 min"), delay in full style ("5 minutes delay"), no delay when on time.
struct TripDisplay: Sendable, Equatable {
    let date: String
    let departure: String
    let actualDeparture: String
    let arrival: String
    let duration: String
    let delay: String?

    init(trip: Trip, style: DisplayStyle) {
        let locale = style.locale
        let dateStyle = Date.FormatStyle(date: .numeric, time: .omitted, locale: locale, timeZone: style.timeZone)
        let timeStyle = Date.FormatStyle(date: .omitted, time: .shortened, locale: locale, timeZone: style.timeZone)
        date = trip.departure.formatted(dateStyle)
        departure = trip.departure.formatted(timeStyle)
        actualDeparture = trip.actualDeparture.formatted(timeStyle)
        arrival = trip.arrival.formatted(timeStyle)
        duration = Self.minutes(trip.durationSeconds, width: .abbreviated, locale: locale)
        delay = trip.delayed
            ? Self.delayTemplate(locale).replacingOccurrences(of: "%@", with: Self.minutes(trip.delaySeconds, width: .wide, locale: locale))
            : nil
    }

    /// Whole minutes (rounded down), in hours and minutes when an hour or longer.
    private static func minutes(_ seconds: Int, width: Duration.UnitsFormatStyle.UnitWidth, locale: Locale) -> String {
        Duration.seconds(seconds / 60 * 60).formatted(.units(allowed: [.hours, .minutes], width: width).locale(locale))
    }

    /// The locale display strings are made in: `locale` when Herald has a delay template in its
    /// language, else en_US, so a trip never reads half in one language and half in another.
    static func supported(_ locale: Locale) -> Locale {
        let language = locale.language.languageCode?.identifier ?? ""
        return templates[language] == nil ? Locale(identifier: "en_US") : locale
    }

    private static let templates = [
        "en": "%@ delay", "de": "%@ Verspätung", "tr": "%@ rötar", "fr": "%@ de retard", "es": "%@ de retraso",
        "it": "%@ di ritardo", "nl": "%@ vertraging",
    ]

    /// "… delay" in the locale's language; English when Herald does not know it.
    private static func delayTemplate(_ locale: Locale) -> String {
        templates[locale.language.languageCode?.identifier ?? ""] ?? "%@ delay"
    }
}
