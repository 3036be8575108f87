import HTTPTypes
@testable import HeraldHTTP
import HeraldTestSupport
import Testing

/// Request targets, heads and routes under mutated input (`Fuzzing`).
@Suite struct HTTPPropertyTests {
    @Test func requestTargetsAndHeadsNeverTrapAndKeepSegmentsWhole() {
        let heads = RequestGuard(allowedHosts: ["localhost", "127.0.0.1"], port: 8080)
        Fuzzing.fuzz(["/auctions/1/bids?x=1&y=%2F", "/units/a%2Fb", "http://127.0.0.1:8080/health?topic=a+b", "*", "/%00", "/a/../b",
              "/events?topic=notifications/x&topic=currency&lastEventId=5"], salt: 3) { bytes in
            let raw = String(decoding: bytes, as: UTF8.self)
            guard let target = try? RequestTarget(raw) else { return }
            #expect(target.segments.allSatisfy { !$0.isEmpty && !$0.contains("\u{0}") })
            _ = try? heads.check(version: "HTTP/1.1", headers: [("Host", raw), ("Content-Length", raw), ("Transfer-Encoding", raw)],
                            authority: target.authority)
        }
    }

    /// The quick reading of plain paths gives what the general reading gives, or the same refusal,
    /// for every mutated target.
    @Test func plainPathsReadAsTheGeneralReadingDoes() {
        Fuzzing.fuzz(["/auctions/1", "/units/a-b_c.d", "//auctions//1//", "/", "/a/../b", "/x%41", "/q?x=1", "/sp ace", "/é", "/#f", "/+"],
                     salt: 11) { bytes in
            let raw = String(decoding: bytes, as: UTF8.self)
            let quick = Result { () throws(Problem) in try RequestTarget(raw) }
            let general = Result { () throws(Problem) in try RequestTarget(parsing: raw) }
            switch (quick, general) {
            case (.success(let one), .success(let other)): #expect(one == other, "\(raw)")
            case (.failure(let one), .failure(let other)): #expect(one.detail == other.detail, "\(raw)")
            default: Issue.record("one reading refused \(raw) and the other did not")
            }
        }
    }

    /// A header name is a token exactly when each byte is a letter, a digit or one of RFC 9110's
    /// punctuation, checked byte by byte against that definition.
    @Test func tokensAreTheRFCsTokens() {
        let punctuation = Set("!#$%&'*+-.^_`|~".utf8)
        func reference(_ bytes: [UInt8]) -> Bool {
            !bytes.isEmpty && bytes.allSatisfy { punctuation.contains($0) || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
        }
        for byte in UInt8(0x01)...UInt8(0x7F) {
            for text in [[byte], [0x41, byte], [byte, 0x7A, 0x2D]] {
                #expect(RequestGuard.isToken(String(decoding: text, as: UTF8.self)) == reference(text), "\(text)")
            }
        }
        #expect(!RequestGuard.isToken("") && !RequestGuard.isToken("é") && RequestGuard.isToken("X-Request-ID"))
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
        Fuzzing.fuzz(["/auctions/1/bids/2", "/units/events", "/units/x", "/", "/auctions", "/auctions/%2F/bids"], salt: 5) { bytes in
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
