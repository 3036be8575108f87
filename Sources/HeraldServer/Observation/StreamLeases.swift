import Foundation
import HeraldAuth
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldThreads

/// What a stream opened with a token holds of it: who opened it, what it watches and when it ends.
/// `POST /streams/{id}/token` moves the end with a fresh token of the same subject, so a stream outlives
/// the token it opened with and neither loses an event nor reconnects.
final class StreamLease: Sendable {
    /// The stream's id: random, 128 bits, so a stream cannot be guessed from another's.
    let id: String
    /// The first token's `sub`: a renewal must name the same.
    let subject: String?
    /// The topics the stream watches: a renewal's grants must still cover them.
    let topics: [String]
    /// The first token's grants: a stream opened without `sub` renews only with the same grants.
    let grants: Grants
    /// The client it was opened from, and when (what an administrator's list shows).
    let client: String
    let opened: Date

    /// Why an administrator ended it.
    enum Ending: Sendable, Equatable {
        /// `DELETE /streams/{id}`: its last event is `ended`.
        case ended
        /// A revocation covered its token: its last event is `revoked`, with the reason.
        case revoked(String)
    }

    private struct State {
        var expires: Date
        /// The `iat` and `jti` of its token, the first's or the last renewal's: what a revocation names.
        var issuedAt: Date?
        var tokenID: String?
        var waker: (@Sendable (Bool) -> Void)?
        /// An administrator ended it (`end`): its end is now, and its last event says why.
        var ending: Ending?
    }

    private let state: Lock<State>

    init(id: String, token: VerifiedToken, topics: [String], client: String = "", opened: Date = Date()) {
        self.id = id
        subject = token.subject
        self.topics = topics
        grants = token.grants
        self.client = client
        self.opened = opened
        state = Lock(State(expires: token.expires, issuedAt: token.issuedAt, tokenID: token.id))
    }

    var expires: Date { state.withLock { $0.expires } }

    var ending: Ending? { state.withLock { $0.ending } }
    var isEnded: Bool { ending != nil }

    /// The stream's token as far as a revocation reads it (its `sub`, `iat` and `jti`).
    var token: VerifiedToken {
        state.withLock { VerifiedToken(subject: subject, expires: $0.expires, grants: grants, issuedAt: $0.issuedAt, id: $0.tokenID) }
    }

    /// Ends the stream now: its end moves to the past and the stream is woken, so its engine ends it
    /// at its next tick (within a second), after what is queued, with `ended` or `revoked` as its last
    /// event. A renewal cannot bring it back.
    func end(_ ending: Ending = .ended) {
        let waker = state.withLock { state -> (@Sendable (Bool) -> Void)? in
            guard state.ending == nil else { return nil }
            state.ending = ending
            state.expires = Date(timeIntervalSince1970: 0)
            return state.waker
        }
        waker?(false)
    }

    /// Moves the end to `token`'s `exp` and wakes the stream, whose engine files the new end; false
    /// when an administrator ended the stream.
    @discardableResult
    func renew(with token: VerifiedToken) -> Bool {
        let waker: (@Sendable (Bool) -> Void)?? = state.withLock { state in
            guard state.ending == nil else { return .none }
            (state.expires, state.issuedAt, state.tokenID) = (token.expires, token.issuedAt, token.id)
            return .some(state.waker)
        }
        guard let waker else { return false }
        waker?(false)
        return true
    }

    /// The stream's waker (the engine's), so that a renewal wakes it.
    func setWaker(_ waker: (@Sendable (Bool) -> Void)?) { state.withLock { $0.waker = waker } }

    /// `{"stream": id, "expiresAt": …}`: the data of `stream`, `token-expiring` and `expired`.
    var json: JSONValue { ["stream": .string(id), "expiresAt": .string(Timestamp.format(expires))] }

    /// One of the lease's events, as SSE: no `id:`, so a client's `Last-Event-ID` stays the last event's.
    func message(_ name: String) -> [UInt8] { SSEEncoder.encode(SSEMessage(id: nil, event: name, data: json.bytes)) }

    /// The last event of a stream an administrator ended: `ended` or `revoked`, `{"stream": id, "reason": …}`.
    var endedMessage: [UInt8] {
        let (name, reason) = switch ending {
        case .revoked(let reason): ("revoked", reason)
        case .ended, nil: ("ended", "an administrator ended this stream")
        }
        let data: JSONValue = ["stream": .string(id), "reason": .string(reason)]
        return SSEEncoder.encode(SSEMessage(id: nil, event: name, data: data.bytes))
    }

    /// What an administrator's list shows of it.
    var listing: JSONValue {
        ["stream": .string(id), "sub": subject.map(JSONValue.string) ?? .null, "topics": .array(topics.map(JSONValue.string)),
         "client": .string(client), "openedAt": .string(Timestamp.format(opened)), "expiresAt": .string(Timestamp.format(expires))]
    }
}

/// The leases of this Herald's open streams, by id.
final class StreamLeases: Sendable {
    private let leases = Lock<[String: StreamLease]>([:])

    /// A lease for a new stream, under a fresh id.
    func open(token: VerifiedToken, topics: [String], client: String = "", opened: Date = Date()) -> StreamLease {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
        let lease = StreamLease(id: id, token: token, topics: topics, client: client, opened: opened)
        leases.withLock { $0[id] = lease }
        return lease
    }

    func lease(_ id: String) -> StreamLease? { leases.withLock { $0[id] } }

    /// The stream is gone.
    func close(_ lease: StreamLease) {
        lease.setWaker(nil)
        leases.withLock { $0[lease.id] = nil }
    }

    var count: Int { leases.withLock { $0.count } }

    /// Ends every stream whose token `revocation` covers, with `revoked` as its last event; how many.
    @discardableResult
    func end(coveredBy revocation: Revocation) -> Int {
        let covered = leases.withLock { $0.values.filter { revocation.covers($0.token) } }
        for lease in covered { lease.end(.revoked(revocation.reason)) }
        return covered.count
    }

    /// The open streams in id order, after `after` if given.
    func all(after: String? = nil) -> [StreamLease] {
        leases.withLock { leases in after.map { after in leases.values.filter { $0.id > after } } ?? Array(leases.values) }.sorted { $0.id < $1.id }
    }
}

extension String {
    /// The string with zeros in front up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(width - count, 0)) + self }
}
