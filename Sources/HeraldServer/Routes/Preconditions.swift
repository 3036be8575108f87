import Foundation
import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore

/// FNV-1a, 64 bits, in hex: enough to tell two bodies, or two versions of a subject, apart.
enum Fingerprint {
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01B3
        }
        return String(hash, radix: 16)
    }

    /// A strong entity tag (`"…"`) for these bytes.
    static func tag(_ bytes: some Sequence<UInt8>) -> String { "\"" + hex(bytes) + "\"" }
}

/// The version of a subject as an entity tag: a digest of what a change can alter, so it changes
/// exactly when the subject does, reads the same on every replica and after a restart, and does not
/// move with the clock (an auction's `remainingSeconds` is not in it).
enum EntityTag {
    static func of(_ unit: HeraldDomain.Unit) -> String { Fingerprint.tag(unit.json.bytes) }
    /// A trip's answers are in a language: each language's answer has a tag of its own (a cache keyed
    /// by the tag must not give one language's answer to a reader of another).
    static func of(_ trip: Trip, style: DisplayStyle) -> String { Fingerprint.tag(trip.document.bytes + Array(style.tag.utf8)) }
    static func of(_ currency: Currency) -> String { Fingerprint.tag(currency.rawValue.utf8) }
    static func of(_ auction: Auction) -> String {
        let stored = Journal.stored(auction)
        let fields: JSONValue = [
            .string(stored.id), .string(stored.status), .int(auction.price), .integer(auction.bids.count),
            .optional(stored.deadline), .optional(stored.winner), .optional(stored.closedAt),
        ]
        return Fingerprint.tag(fields.bytes)
    }
}

/// `If-Match` and `If-None-Match` (RFC 9110 §13.1): a change made only if the subject is at the
/// version the client names, so that two clients editing one subject cannot overwrite each other
/// unseen; and a read answered 304 when the client has the current version.
struct Preconditions: Sendable {
    /// An entity-tag list: `*`, or tags (a weak one `W/"x"` kept with its prefix), or a value that is
    /// neither, which names no version.
    enum Tags: Sendable, Equatable {
        case any
        case list([String])
        case malformed(String)
    }

    let ifMatch: Tags?
    let ifNoneMatch: Tags?

    /// The request's conditions.
    init(_ request: Request) {
        ifMatch = request.header(.ifMatch).map(Self.parse)
        ifNoneMatch = request.header(.ifNoneMatch).map(Self.parse)
    }

    /// Whether the request named no condition.
    var isEmpty: Bool { ifMatch == nil && ifNoneMatch == nil }

    /// Refuses the change (412) unless `current`, the subject's tag as the change sees it (nil: it does
    /// not exist), passes: `If-Match` compares strongly (a weak tag never matches), `If-None-Match`
    /// weakly; `*` is any version at all.
    /// A malformed header names no version, and its condition cannot be judged: 412, saying how to
    /// write one. `current` is worked out only when the request names a condition (a tag is the
    /// subject's JSON, written and hashed).
    func check(_ current: @autoclosure () -> String?, _ subject: String) throws(DomainError) {
        guard !isEmpty else { return }
        let current = current()
        for (field, tags) in [("If-Match", ifMatch), ("If-None-Match", ifNoneMatch)] {
            guard case .malformed(let value) = tags else { continue }
            var error = DomainError(.preconditionFailed, "\(field) must be * or quoted entity tags (\"…\", W/\"…\"), comma-separated, "
                                    + "not '\(RequestGuard.printable(value))'; nothing changed")
            error.currentTag = current
            throw error
        }
        if let ifMatch, !Self.matches(ifMatch, current, weak: false) {
            var error = DomainError(.preconditionFailed, current == nil
                ? "\(subject) does not exist, so If-Match cannot hold; nothing changed"
                : "\(subject) is at version \(current ?? ""), not the one If-Match names; nothing changed")
            error.currentTag = current
            throw error
        }
        if let ifNoneMatch, Self.matches(ifNoneMatch, current, weak: true) {
            var error = DomainError(.preconditionFailed, ifNoneMatch == .any
                ? "\(subject) exists already (If-None-Match: *); nothing changed"
                : "\(subject) is at a version If-None-Match names; nothing changed")
            error.currentTag = current
            throw error
        }
    }

    /// `check`, outside a change: its 412 as a problem. A target with no version (a new auction, a
    /// notification, a list) has `current` nil, which no `If-Match` names.
    func require(_ current: String?, _ subject: String) throws {
        do throws(DomainError) {
            try check(current, subject)
        } catch {
            throw Problem(error)
        }
    }

    /// Whether a read of the subject at `current` is 304: `If-None-Match` names its version.
    func notModified(_ current: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return Self.matches(ifNoneMatch, current, weak: true)
    }

    private static func matches(_ tags: Tags, _ current: String?, weak: Bool) -> Bool {
        guard let current else { return false }
        switch tags {
        case .malformed: return false
        case .any: return true
        case .list(let list):
            return list.contains { tag in
                if tag.hasPrefix("W/") { return weak && tag.dropFirst(2) == current }
                return tag == current
            }
        }
    }

    /// `*` or `#entity-tag` (RFC 9110 §8.8.3): `"x"`, `W/"x"`, comma-separated.
    static func parse(_ value: String) -> Tags {
        let text = value.trimmingSpacesAndTabs
        if text == "*" { return .any }
        var tags: [String] = []
        var bytes = Substring(text).utf8[...]
        func skipSeparators() { while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") || first == UInt8(ascii: ",") { bytes.removeFirst() } }
        skipSeparators()
        while !bytes.isEmpty {
            var tag: [UInt8] = []
            if bytes.starts(with: "W/".utf8) {
                tag += "W/".utf8
                bytes.removeFirst(2)
            }
            guard bytes.first == UInt8(ascii: "\""), let end = bytes.dropFirst().firstIndex(of: UInt8(ascii: "\"")) else {
                return .malformed(value)
            }
            tag += bytes[bytes.startIndex...end]
            bytes = bytes[bytes.index(after: end)...]
            tags.append(String(decoding: tag, as: UTF8.self))
            let before = bytes.count
            skipSeparators()
            guard bytes.isEmpty || bytes.count < before else { return .malformed(value) }
        }
        return tags.isEmpty ? .malformed(value) : .list(tags)
    }
}
