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

    /// The revocation kept under `key` (`sub:…`, `jti:…` or `all`), as a store or a replica's message
    /// gives it back; nil for a key that names none, or `all` without `issuedBefore`.
    public init?(key: String, issuedBefore: Date?, until: Date) {
        if key.hasPrefix("sub:") {
            self.init(scope: .subject(String(key.dropFirst(4))), issuedBefore: issuedBefore, until: until)
        } else if key.hasPrefix("jti:") {
            self.init(scope: .token(String(key.dropFirst(4))), issuedBefore: nil, until: until)
        } else if key == "all", let issuedBefore {
            self.init(scope: .all, issuedBefore: issuedBefore, until: until)
        } else {
            return nil
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
    /// Kept at most, with those held for a store: more is refused until some run out.
    public static let limit = 10_000

    private struct State {
        var kept: [String: Revocation] = [:]
        /// Keys held for revocations being stored (`hold`), each with how many hold it.
        var held: [String: Int] = [:]

        /// Whether `key` has a place: kept or held already, or fewer than `limit` are both.
        func hasPlace(for key: String) -> Bool { kept[key] != nil || held[key] != nil || kept.count + held.count < Revocations.limit }

        mutating func release(_ key: String) {
            guard let holds = held[key] else { return }
            held[key] = holds > 1 ? holds - 1 : nil
        }
    }

    private let state = Lock(State())

    public init(_ revocations: [Revocation] = []) {
        state.withLock { state in
            for revocation in revocations { state.kept[revocation.key] = state.kept[revocation.key].map(revocation.merged) ?? revocation }
        }
    }

    /// The revocation that covers `token`, if one does (and has not run out at `now`).
    public func covering(_ token: VerifiedToken, at now: Date) -> Revocation? {
        state.withLock { state -> Revocation? in
            guard !state.kept.isEmpty else { return nil }
            let candidates = [token.subject.map { "sub:" + $0 }, token.id.map { "jti:" + $0 }, "all"]
            for key in candidates.compactMap({ $0 }) {
                if let revocation = state.kept[key], revocation.until > now, revocation.covers(token) { return revocation }
            }
            return nil
        }
    }

    /// Holds a place for `revocation` while it is stored; false when there is none (`limit` kept and
    /// held, and its key is new). Ended by `add(_:held:)` once stored, or by `release` when not: the
    /// check and the keeping are then one, however many are revoked at once.
    public func hold(_ revocation: Revocation) -> Bool {
        state.withLock { state in
            guard state.hasPlace(for: revocation.key) else { return false }
            state.held[revocation.key, default: 0] += 1
            return true
        }
    }

    /// Gives up the place `hold` took (the revocation could not be stored).
    public func release(_ revocation: Revocation) {
        state.withLock { $0.release(revocation.key) }
    }

    /// Keeps `revocation` (merged with one of the same key), in the place `hold` took when `held`;
    /// the one kept, or nil when it has no place (`limit` kept, and its key is new).
    @discardableResult
    public func add(_ revocation: Revocation, held: Bool = false) -> Revocation? {
        state.withLock { state -> Revocation? in
            if held { state.release(revocation.key) }
            let merged = state.kept[revocation.key].map { $0.merged(with: revocation) } ?? revocation
            guard held || state.hasPlace(for: revocation.key) else { return nil }
            state.kept[revocation.key] = merged
            return merged
        }
    }

    /// Keeps `revocation` if its key is new or it reaches further than the one kept (`add`); the one
    /// kept when that changed, nil when nothing did (known already, or no place).
    public func learn(_ revocation: Revocation) -> Revocation? {
        state.withLock { state -> Revocation? in
            let known = state.kept[revocation.key]
            let merged = known.map { $0.merged(with: revocation) } ?? revocation
            guard merged != known, state.hasPlace(for: revocation.key) else { return nil }
            state.kept[revocation.key] = merged
            return merged
        }
    }

    /// Forgets those that ran out by `now`.
    public func dropExpired(at now: Date) {
        state.withLock { state in
            guard state.kept.values.contains(where: { $0.until <= now }) else { return }
            state.kept = state.kept.filter { $0.value.until > now }
        }
    }

    /// Every revocation kept, by key.
    public var all: [Revocation] { state.withLock { $0.kept.values.sorted { $0.key < $1.key } } }

    public var count: Int { state.withLock { $0.kept.count } }
}
