public import Foundation
import HeraldThreads

/// An administrator's word that some tokens no longer count (`POST /revocations`): every token of a
/// user (`sub`) issued up to a time, one token (`jti`), or every token issued before a time (`iat`).
/// A token without `iat` cannot show when it was issued: a revocation by time covers it.
public struct Revocation: Sendable, Equatable {
    public enum Scope: Sendable, Equatable, Hashable {
        /// The user's tokens issued before `issuedBefore`.
        case subject(String)
        /// The token whose `jti` this is, whenever it was issued.
        case token(String)
        /// Every token issued before `issuedBefore`.
        case all
    }

    public let scope: Scope
    /// Tokens issued at or after this time are not covered; nil (a `jti`'s): whenever issued.
    public let issuedBefore: Date?
    /// When every token it covers has expired, and it can be forgotten.
    public let until: Date

    public init(scope: Scope, issuedBefore: Date?, until: Date) {
        (self.scope, self.issuedBefore, self.until) = (scope, issuedBefore, until)
    }

    /// Whether `token` is one of those it names.
    public func covers(_ token: VerifiedToken) -> Bool {
        switch scope {
        case .subject(let subject): guard token.subject == subject else { return false }
        case .token(let id): guard token.id == id else { return false }
        case .all: break
        }
        guard let issuedBefore else { return true }
        return (token.issuedAt ?? .distantPast) < issuedBefore
    }

    /// What it is kept under: one revocation for each user or token, and one by time (a later one
    /// of the same key takes its place, reaching further, `merged`).
    public var key: String {
        switch scope {
        case .subject(let subject): "sub:" + subject
        case .token(let id): "jti:" + id
        case .all: "all"
        }
    }

    /// This one and `other` of the same key as one: the later time and the later end of each.
    public func merged(with other: Revocation) -> Revocation {
        let issuedBefore: Date? = switch (self.issuedBefore, other.issuedBefore) {
        case let (mine?, theirs?): max(mine, theirs)
        default: nil
        }
        return Revocation(scope: scope, issuedBefore: issuedBefore, until: max(until, other.until))
    }

    /// Why a token it covers is refused, for a 401's detail and a stream's last event.
    public var reason: String {
        switch scope {
        case .subject(let subject): "an administrator revoked the tokens of '\(TokenVerifier.printable(subject))'"
        case .token(let id): "an administrator revoked the token '\(TokenVerifier.printable(id))'"
        case .all: "an administrator revoked every token issued before \(issuedBefore.map { $0.formatted(.iso8601) } ?? "now")"
        }
    }
}

/// The revocations in force, by key: looked up on every request that carries a token, by its `sub`
/// and its `jti` (two dictionary look-ups) and the one revocation by time.
public final class Revocations: Sendable {
    /// Kept at most: more is refused (`add` returns false) until some run out.
    public static let limit = 10_000
    private let kept = Lock<[String: Revocation]>([:])

    public init(_ revocations: [Revocation] = []) {
        kept.withLock { kept in for revocation in revocations { kept[revocation.key] = kept[revocation.key].map(revocation.merged) ?? revocation } }
    }

    /// The revocation that covers `token`, if one does (and has not run out at `now`).
    public func covering(_ token: VerifiedToken, at now: Date) -> Revocation? {
        kept.withLock { kept -> Revocation? in
            guard !kept.isEmpty else { return nil }
            let candidates = [token.subject.map { "sub:" + $0 }, token.id.map { "jti:" + $0 }, "all"]
            for key in candidates.compactMap({ $0 }) {
                if let revocation = kept[key], revocation.until > now, revocation.covers(token) { return revocation }
            }
            return nil
        }
    }

    /// Keeps `revocation` (merged with one of the same key); the one kept, or nil when `limit` are
    /// kept already and it is a new key.
    @discardableResult
    public func add(_ revocation: Revocation) -> Revocation? {
        kept.withLock { kept -> Revocation? in
            if let known = kept[revocation.key] {
                let merged = known.merged(with: revocation)
                kept[revocation.key] = merged
                return merged
            }
            guard kept.count < Self.limit else { return nil }
            kept[revocation.key] = revocation
            return revocation
        }
    }

    /// Keeps `revocation` if its key is new or it reaches further than the one kept (`add`); the one
    /// kept when that changed, nil when nothing did (known already, or `limit` kept).
    public func learn(_ revocation: Revocation) -> Revocation? {
        kept.withLock { kept -> Revocation? in
            let known = kept[revocation.key]
            let merged = known.map { $0.merged(with: revocation) } ?? revocation
            guard merged != known, known != nil || kept.count < Self.limit else { return nil }
            kept[revocation.key] = merged
            return merged
        }
    }

    /// Whether `add` would keep `revocation`: its key is kept already, or fewer than `limit` are.
    public func accepts(_ revocation: Revocation) -> Bool {
        kept.withLock { $0[revocation.key] != nil || $0.count < Self.limit }
    }

    /// Forgets those that ran out by `now`.
    public func dropExpired(at now: Date) {
        kept.withLock { kept in
            guard kept.values.contains(where: { $0.until <= now }) else { return }
            kept = kept.filter { $0.value.until > now }
        }
    }

    /// Every revocation kept, by key.
    public var all: [Revocation] { kept.withLock { $0.values.sorted { $0.key < $1.key } } }

    public var count: Int { kept.withLock { $0.count } }
}
