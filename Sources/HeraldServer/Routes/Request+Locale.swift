import Foundation
import HTTPTypes
import HeraldDomain
import HeraldHTTP

extension Request {
    /// `?locale=`, else the first `Accept-Language` tag, else en_US; a language Herald has no strings
    /// for is en_US as a whole.
    var locale: Locale {
        let tag = query("locale") ?? header(.acceptLanguage).flatMap(Self.firstLanguage)
        guard let tag, !tag.isEmpty, tag != "*", tag.utf8.count <= 35,
              tag.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
        else { return DisplayStyle.events.locale }
        return TripDisplay.supported(Locale(identifier: tag.replacingOccurrences(of: "-", with: "_")))
    }

    /// The locale (`locale`) and the time zone (`?timeZone=`, an IANA name; UTC by default) of a
    /// trip's display strings; 400 for a zone Herald does not know.
    func displayStyle() throws -> DisplayStyle {
        guard let name = query("timeZone") else { return DisplayStyle(locale: locale, timeZone: .utc) }
        guard name.utf8.count <= 64, let zone = TimeZone(identifier: name)
        else {
            throw Problem(status: .badRequest, detail: "unknown time zone '\(RequestGuard.printable(name))': name one of the IANA database, "
                          + "such as Europe/Berlin or UTC (the default)")
        }
        return DisplayStyle(locale: locale, timeZone: zone, zoneName: name == "UTC" ? "UTC" : zone.identifier)
    }

    /// The first language range of an `Accept-Language` value (`de-CH;q=0.9, en` is `de-CH`), if any.
    static func firstLanguage(_ header: String) -> String? {
        for range in header.split(separator: ",") {
            guard let tag = range.split(separator: ";", omittingEmptySubsequences: false).first?.trimmingSpacesAndTabs,
                  !tag.isEmpty else { continue }
            return tag
        }
        return nil
    }
}
