import Foundation
@testable import HeraldAuth
@testable import HeraldHTTP
import HeraldDomain
import HeraldJSON
@testable import HeraldServer
import Testing
import HTTPTypes

/// Property-based fuzzing of every parser that reads client input: seeds mutated byte by byte
/// (flips, inserts, deletes, repeats), thousands of times per run. A trap kills the test process, so
/// a crash fails the run; each property below must also hold. The generator is seeded, so a failure
/// names a seed that reproduces it (`HERALD_FUZZ_SEED`).
@Suite struct ParserPropertyTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["HERALD_FUZZ_ITERATIONS"] ?? "") ?? 50_000
    static let seed = UInt64(ProcessInfo.processInfo.environment["HERALD_FUZZ_SEED"] ?? "") ?? 0x5EED_4E4A_1D

    /// SplitMix64: small, fast, reproducible.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let interesting: [UInt8] = Array("{}[]\",:\\/%?&=;+-.eE0123456789 \t\r\nTZtz:".utf8) + [0x00, 0x7F, 0x80, 0xC3, 0xFF, 0xED, 0xA0]

    /// One mutation of `input`.
    static func mutate(_ input: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(interesting.randomElement(using: &random) ?? 0, at: position)
            case 2 where !bytes.isEmpty: bytes.remove(at: position)
            case 3 where !bytes.isEmpty:
                let end = min(bytes.count, position + Int.random(in: 1...8, using: &random))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            case 4 where !bytes.isEmpty: bytes[position] = interesting.randomElement(using: &random) ?? 0
            default: bytes.append(interesting.randomElement(using: &random) ?? 0)
            }
        }
        return bytes
    }

    /// Runs `property` on `iterations` mutations of the seeds (and on the seeds themselves).
    func fuzz(_ seeds: [String], salt: UInt64, _ property: ([UInt8]) -> Void) {
        var random = Generator(state: Self.seed ^ salt)
        let corpus = seeds.map { Array($0.utf8) }
        for seed in corpus { property(seed) }
        for _ in 0..<Self.iterations {
            var input = corpus.randomElement(using: &random) ?? []
            for _ in 0..<Int.random(in: 1...3, using: &random) { input = Self.mutate(input, &random) }
            property(input)
        }
    }

    @Test func jsonThatParsesRoundTrips() {
        fuzz([#"{"a":[1,2.5,-0,"x\u00e9\n",true,false,null],"b":{"c":{}}}"#, #"{"bidder":"ann","amount":100}"#, "[[[[]]]]",
              #""\ud83d\ude00""#, "1e-400", "9223372036854775807", #"{"a":1,"b":2}"#], salt: 1) { bytes in
            guard let value = try? JSONValue.parse(bytes) else { return }
            let again = try? JSONValue.parse(value.bytes)
            #expect(again.map { Self.same($0, value) } == true, "round trip of \(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// Equal as JSON: numbers by value (the writer prints 2.0 as 2, which reads back as an integer).
    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case let (.int(x), .double(y)), let (.double(y), .int(x)): Double(x) == y
        case let (.array(x), .array(y)): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && same($0.1, $1.1) }
        default: a == b
        }
    }

    /// A time that parses is in range and is already what the store keeps: formatted (as the store
    /// writes it) and parsed again, it is the same instant, so memory and store agree after a restart
    /// (microseconds were kept in memory and rounded in the store, and a delay changed by one second).
    @Test func timestampsThatParseAreInRangeAndFormatBack() {
        fuzz(["2015-10-09T13:09:53Z", "2015-10-09T13:09:53.25+02:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
              "2016-02-29t23:59:60-23:59", "2015-10-09T13:10:52.9996Z", "9999-12-31T23:59:59.99999Z", "2015-10-09T13:09:53.0004999Z"],
             salt: 2) { bytes in
            guard let date = Timestamp.parse(String(decoding: bytes, as: UTF8.self)) else { return }
            #expect(Timestamp.range.contains(date))
            let formatted = Timestamp.format(date)
            #expect(Timestamp.parse(formatted) == date, "\(formatted)")
        }
        #expect(Timestamp.format(Timestamp.parse("2015-10-09T13:10:52.9996Z") ?? .distantPast) == "2015-10-09T13:10:52.999Z",
                "a time is kept to the millisecond it is in")
        for text in ["2015-10-09T13:10:52.999Z", "2015-10-09T13:10:52.001Z", "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.999Z"] {
            #expect(Timestamp.format(Timestamp.parse(text) ?? .distantPast) == text, "milliseconds are exact")
        }
    }

    /// Any `exp` and `nbf` a validly signed token may carry, every Double included (huge, tiny,
    /// negative, subnormal, infinite, NaN): checking them never traps, an accepted token expires after
    /// now and no later than the end of 9999, and one not yet valid is refused.
    @Test func tokenTimesNeverTrapAndStayWithinWhatHeraldKeeps() {
        var random = Generator(state: Self.seed ^ 9)
        let now = Date(timeIntervalSince1970: 1_795_400_000)
        let edges: [Double] = [9_999_999_999_999_999_999, 1e300, .greatestFiniteMagnitude, 253_402_300_800, -1e300, 0, -0.0,
                               .leastNonzeroMagnitude, .infinity, -.infinity, .nan, 1_795_400_000, 1_795_400_000.5]
        for index in 0..<(Self.iterations / 10 + edges.count * edges.count) {
            let pair = index < edges.count * edges.count
                ? (edges[index / edges.count], edges[index % edges.count])
                : (Double(bitPattern: random.next()), random.next() % 2 == 0 ? Double(bitPattern: random.next()) : .nan)
            let claims = TokenClaims(subject: "ann", expires: Date(timeIntervalSince1970: pair.0),
                                     notBefore: pair.1.isNaN ? nil : Date(timeIntervalSince1970: pair.1), grants: Grants())
            guard let token = try? TokenVerifier.check(claims, at: now) else { continue }
            #expect(token.expires > now && token.expires <= TokenVerifier.latestExpiry, "exp \(pair.0)")
            #expect(!(pair.1 > now.timeIntervalSince1970), "nbf \(pair.1) is later than now, yet accepted")
        }
    }

    @Test func requestTargetsAndHeadsNeverTrapAndKeepSegmentsWhole() {
        let heads = RequestGuard(allowedHosts: ["localhost", "127.0.0.1"], port: 8080)
        fuzz(["/auctions/1/bids?x=1&y=%2F", "/units/a%2Fb", "http://127.0.0.1:8080/health?topic=a+b", "*", "/%00", "/a/../b",
              "/events?topic=notifications/x&topic=currency&lastEventId=5"], salt: 3) { bytes in
            let raw = String(decoding: bytes, as: UTF8.self)
            guard let target = try? RequestTarget(raw) else { return }
            #expect(target.segments.allSatisfy { !$0.isEmpty && !$0.contains("\u{0}") })
            _ = try? heads.check(version: "HTTP/1.1", headers: [("Host", raw), ("Content-Length", raw), ("Transfer-Encoding", raw)],
                            authority: target.authority)
        }
    }

    /// Whatever `Accept-Language` says, the display locale is one whose language Herald has strings
    /// for, or the default (en_US); a header naming a supported language first gets that language.
    @Test func acceptLanguageChoosesASupportedLocaleOrTheDefault() {
        let supported: Set<String> = ["en", "de", "tr", "fr", "es", "it", "nl"]
        fuzz([";", ";;", ";, en", ";q=1", ", en", "de-CH;q=0.9, en", "*", "tr-TR,tr;q=0.9", "fr", "nl-BE"], salt: 4) { bytes in
            let value = String(decoding: bytes, as: UTF8.self)
            let request = Request(method: .get, path: "/trips/1", headers: [.acceptLanguage: value])
            let chosen = TripDisplay.supported(request.locale)
            let language = chosen.language.languageCode?.identifier ?? ""
            #expect(supported.contains(language), "\(value.debugDescription) gave \(chosen.identifier)")
            // Either the first language range's own language, or the default as a whole.
            // (Its language as Locale reads it: "eng" and "tUr" are English and Turkish.)
            let first = Request.firstLanguage(request.header(.acceptLanguage) ?? "")
                .map { Locale(identifier: $0.replacingOccurrences(of: "-", with: "_")).language.languageCode?.identifier }
            #expect([Trip.eventLocale.identifier, "en_US"].contains(chosen.identifier) || language == first,
                    "\(value.debugDescription) gave \(chosen.identifier)")
        }
        for (header, language) in [("de-CH;q=0.9, en", "de"), ("tr-TR,tr;q=0.9", "tr"), ("xx, en", "en"), ("nl-BE", "nl")] {
            let request = Request(method: .get, path: "/trips/1", headers: [.acceptLanguage: header])
            #expect(TripDisplay.supported(request.locale).language.languageCode?.identifier == language, "\(header)")
        }
    }

    /// `?limit=` and `?after=` either read as documented or are refused with 400.
    @Test func pagingReadsItsArgumentsOrRefusesThem() {
        fuzz(["100", "1", "1000", "0", "18446744073709551616", "-1", "1e3", " 5", "٣"], salt: 6) { bytes in
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
        fuzz([" a ", "\tb\t", "  ", "", "a b", "\u{A0}x\u{A0}", " \r\n "], salt: 7) { bytes in
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

    /// A route matches only a path of its shape (as many segments, each literal in place), and binds
    /// each parameter to the segment at its place; the most literal shape wins; anything else is 404.
    @Test func routingMatchesOnlyPathsOfARegisteredShape() {
        let patterns = ["/auctions", "/auctions/{id}", "/auctions/{id}/bids", "/auctions/{id}/bids/{bid}", "/units/events", "/units/{id}"]
        var router = Router()
        for pattern in patterns { router.add(.get, pattern) { _ in .empty(status: 200) } }
        let shapes = patterns.map { $0.split(separator: "/").map(String.init) }
        func fits(_ shape: [String], _ parts: [String]) -> Bool {
            shape.count == parts.count && zip(shape, parts).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        fuzz(["/auctions/1/bids/2", "/units/events", "/units/x", "/", "/auctions", "/auctions/%2F/bids"], salt: 5) { bytes in
            let segments = String(decoding: bytes, as: UTF8.self).split(separator: "/").map(String.init)
            let fitting = shapes.filter { fits($0, segments) }
            switch router.match(method: .get, segments: segments) {
            case .handler(_, let parameters, let pattern):
                let shape = pattern.split(separator: "/").map(String.init)
                #expect(fits(shape, segments), "\(pattern) matched \(segments)")
                let literals = { (shape: [String]) in shape.count { !$0.hasPrefix("{") } }
                #expect(fitting.allSatisfy { literals($0) <= literals(shape) }, "\(pattern) is the most literal for \(segments)")
                for (index, part) in shape.enumerated() where part.hasPrefix("{") {
                    #expect(parameters[String(part.dropFirst().dropLast())] == segments[index])
                }
            case .notFound:
                #expect(fitting.isEmpty, "\(segments) fits \(fitting) but was not found")
            case .methodNotAllowed:
                Issue.record("GET is the only method registered: \(segments)")
            }
            let options = router.respond(to: Request(method: .options, path: "/" + segments.joined(separator: "/"), segments: segments))
            #expect(options.status.code == (fitting.isEmpty ? 404 : 204))
        }
    }
}
