import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldThreads

/// Each unit's JSON bytes and entity tag as last read, kept with the unit they were made of: a
/// `GET /units/{id}` of an unchanged unit answers with them instead of encoding and fingerprinting it
/// again (a third of a small GET). Forgotten all at once past `limit` units, so that units removed
/// long ago do not stay.
final class UnitEncodings: Sendable {
    private struct Encoding {
        let unit: HeraldDomain.Unit
        let bytes: [UInt8]
        let etag: String
    }

    private let encodings = Lock<[String: Encoding]>([:])
    let limit: Int

    init(limit: Int = 10_000) { self.limit = limit }

    /// The unit's JSON and its entity tag (`EntityTag.of`).
    func encoded(_ unit: HeraldDomain.Unit) -> (bytes: [UInt8], etag: String) {
        if let kept = encodings.withLock({ $0[unit.id] }), kept.unit == unit { return (kept.bytes, kept.etag) }
        // The tag is a hash of these bytes (`EntityTag.of`), not of a second rendering.
        let bytes = unit.json.bytes
        let etag = Fingerprint.tag(bytes)
        encodings.withLock { encodings in
            if encodings.count >= limit { encodings.removeAll() }
            encodings[unit.id] = Encoding(unit: unit, bytes: bytes, etag: etag)
        }
        return (bytes, etag)
    }
}

/// Each currency's JSON bytes and entity tag, made once.
enum CurrencyEncodings {
    private static let encodings: [(bytes: [UInt8], etag: String)] = Currency.allCases.map { ($0.json.bytes, EntityTag.of($0)) }

    static func encoded(_ currency: Currency) -> (bytes: [UInt8], etag: String) {
        guard let index = Currency.allCases.firstIndex(of: currency) else { return (currency.json.bytes, EntityTag.of(currency)) }
        return encodings[index]
    }
}
