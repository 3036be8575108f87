import Foundation
import HTTPTypes
@testable import HeraldHTTP
import HeraldDomain
@testable import HeraldServer
import HeraldTestSupport
import Testing

/// The server's readers of client input under mutated input (`Fuzzing`): languages, paging, trimming.
/// The other modules' parsers are fuzzed in their own test targets the same way.
@Suite struct ParserPropertyTests {
    /// Whatever `Accept-Language` says, the display locale is one whose language Herald has strings
    /// for, or the default (en_US); a header naming a supported language first gets that language.
    @Test func acceptLanguageChoosesASupportedLocaleOrTheDefault() {
        let supported: Set<String> = ["en", "de", "tr", "fr", "es", "it", "nl"]
        Fuzzing.fuzz([";", ";;", ";, en", ";q=1", ", en", "de-CH;q=0.9, en", "*", "tr-TR,tr;q=0.9", "fr", "nl-BE"], salt: 4) { bytes in
            let value = String(decoding: bytes, as: UTF8.self)
            let request = Request(method: .get, path: "/trips/1", headers: [.acceptLanguage: value])
            let chosen = TripDisplay.supported(request.locale)
            let language = chosen.language.languageCode?.identifier ?? ""
            #expect(supported.contains(language), "\(value.debugDescription) gave \(chosen.identifier)")
            // Either the first language range's own language, or the default as a whole.
            // (Its language as Locale reads it: "eng" and "tUr" are English and Turkish.)
            let first = Request.firstLanguage(request.header(.acceptLanguage) ?? "")
                .map { Locale(identifier: $0.replacingOccurrences(of: "-", with: "_")).language.languageCode?.identifier }
            #expect([DisplayStyle.events.locale.identifier, "en_US"].contains(chosen.identifier) || language == first,
                    "\(value.debugDescription) gave \(chosen.identifier)")
        }
        for (header, language) in [("de-CH;q=0.9, en", "de"), ("tr-TR,tr;q=0.9", "tr"), ("xx, en", "en"), ("nl-BE", "nl")] {
            let request = Request(method: .get, path: "/trips/1", headers: [.acceptLanguage: header])
            #expect(TripDisplay.supported(request.locale).language.languageCode?.identifier == language, "\(header)")
        }
    }

    /// `?limit=` and `?after=` either read as documented or are refused with 400.
    @Test func pagingReadsItsArgumentsOrRefusesThem() {
        Fuzzing.fuzz(["100", "1", "1000", "0", "18446744073709551616", "-1", "1e3", " 5", "٣"], salt: 6) { bytes in
            let value = String(decoding: bytes, as: UTF8.self)
            let request = Request(method: .get, path: "/units", query: [("limit", value), ("after", value)])
            do {
                let paging = try Paging(request)
                #expect((1...Paging.maximumLimit).contains(paging.limit), "limit \(value)")
                #expect(value.isASCIIDigits)
                #expect(try paging.numericAfter() == Int(value))
            } catch let problem as Problem {
                #expect(problem.status == 400)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    /// HTTP's optional whitespace is trimmed at both ends and nothing else is touched.
    @Test func trimmingTakesOnlySpacesAndTabsFromTheEnds() {
        Fuzzing.fuzz([" a ", "\tb\t", "  ", "", "a b", "\u{A0}x\u{A0}", " \r\n "], salt: 7) { bytes in
            let value = String(decoding: bytes, as: UTF8.self)
            let trimmed = value.trimmingSpacesAndTabs
            let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
            #expect(!(trimmed.utf8.first.map(isSpace) ?? false) && !(trimmed.utf8.last.map(isSpace) ?? false))
            let leading = value.utf8.prefix(while: isSpace).count
            let kept = Array(value.utf8.dropFirst(leading))
            #expect(Array(trimmed.utf8) == Array(kept.prefix(trimmed.utf8.count)), "a middle part of \(value.debugDescription)")
            #expect(kept.dropFirst(trimmed.utf8.count).allSatisfy(isSpace))
        }
    }
}
