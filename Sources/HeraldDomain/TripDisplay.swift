import Foundation

/// A trip's display strings in one locale (times in UTC): date in short style, times in short style,
/// duration short ("16 min"), delay in full style ("5 minutes delay"), no delay when on time.
public struct TripDisplay: Sendable, Equatable {
    public let date: String
    public let departure: String
    public let actualDeparture: String
    public let arrival: String
    public let duration: String
    public let delay: String?

    public init(trip: Trip, locale: Locale) {
        let utc = TimeZone(identifier: "UTC") ?? .gmt
        let dateStyle = Date.FormatStyle(date: .numeric, time: .omitted, locale: locale, timeZone: utc)
        let timeStyle = Date.FormatStyle(date: .omitted, time: .shortened, locale: locale, timeZone: utc)
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

    /// "… delay" in the locale's language; English when Herald does not know it.
    private static func delayTemplate(_ locale: Locale) -> String {
        switch locale.language.languageCode?.identifier {
        case "de": "%@ Verspätung"
        case "tr": "%@ rötar"
        case "fr": "%@ de retard"
        case "es": "%@ de retraso"
        case "it": "%@ di ritardo"
        case "nl": "%@ vertraging"
        default: "%@ delay"
        }
    }
}
