import Foundation
import HTTPTypes
import HeraldAuth
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import Logging

/// For an administrator: `POST /revocations` revokes every token of a user (`sub`) issued up to now
/// (or up to `issuedBefore`), one token (`jti`), or every token issued before a time
/// (`issuedBefore` alone). Once the revocation is stored, every open stream whose token it covers
/// ends with `revoked` as its last event, on every replica; no request with a covered token gets
/// through (401). `GET /revocations` lists those in force. A revocation is kept until `until`, when
/// every token it covers has expired (by default the longest life `herald token` gives, 366 days).
struct Revoking: Sendable {
    let access: Access
    let revocations: Revocations
    let leases: StreamLeases
    let journal: Journal
    /// Replicas: each revocation goes to the others at once.
    let listener: PostgresListener?
    let logger: Logger

    /// The longest a revocation is kept, and how long by default: `herald token --ttl`'s longest.
    static let longestLife: TimeInterval = 366 * 86_400

    /// How often a replica reads the revocations again, in case it missed one's message.
    static let rereadEvery: Duration = .seconds(5)

    func list(_ request: Request) throws -> Response {
        _ = try access.administrator(request)
        let now = access.now()
        let kept = revocations.all.filter { $0.until > now }
        return .json(["revocations": .array(kept.map(Self.json))], headers: [.cacheControl: "no-store"])
    }

    func revoke(_ request: Request) throws -> Response {
        _ = try access.administrator(request)
        let now = access.now()
        let revocation = try Self.revocation(try request.json(), now: now)
        guard revocations.hold(revocation) else {
            throw Problem(status: .conflict, detail: "Herald keeps at most \(Revocations.limit) revocations; each is dropped at its until, "
                          + "or revoke by time (issuedBefore alone) to cover many at once")
        }
        let stored = Self.stored(revocation)
        let (journal, logger) = (journal, logger)
        return .later { answer in
            journal.writer.submit({ batch throws(DomainError) in try journal.revoke(stored, in: batch) }) { result in
                switch result {
                case .success:
                    let kept = apply(revocation, held: true)
                    listener?.send(Self.message(Self.stored(kept)))
                    logger.notice("tokens revoked", metadata: ["auth.revoked": "\(kept.key)"])
                    answer(.json(Self.json(kept), status: .created, headers: [.cacheControl: "no-store"]))
                case .failure(let error):
                    revocations.release(revocation)
                    answer(Routes.problem(error, request: request, logger: logger).response)
                }
            }
        }
    }

    /// Keeps `revocation` in force here (in the place held for it, when `held`) and ends the streams
    /// it covers; the revocation kept (merged with an earlier one of the same key).
    @discardableResult
    func apply(_ revocation: Revocation, held: Bool = false) -> Revocation {
        let kept = revocations.add(revocation, held: held) ?? revocation
        leases.end(coveredBy: kept)
        return kept
    }

    /// A replica's message (this one's included): a revocation another replica stored. False: not one.
    func received(_ message: JSONValue) -> Bool {
        guard let body = message["revoke"] else { return false }
        if let key = body["key"]?.stringValue, let until = body["until"]?.stringValue.flatMap(Double.init),
           let revocation = Self.revocation(StoredRevocation(key: key, issuedBefore: body["issuedBefore"]?.stringValue.flatMap(Double.init),
                                                             until: until)) {
            apply(revocation)
        }
        return true
    }

    /// The message that tells the other replicas of `stored`: `{"revoke": {key, issuedBefore?, until}}`,
    /// with the store's own fields (its times as text, which reads back exactly).
    static func message(_ stored: StoredRevocation) -> String {
        var fields: [(String, JSONValue)] = [("key", .string(stored.key))]
        if let before = stored.issuedBefore { fields.append(("issuedBefore", .string(String(before)))) }
        fields.append(("until", .string(String(stored.until))))
        return String(decoding: JSONValue.object([("revoke", .object(fields))]).bytes, as: UTF8.self)
    }

    /// The revocations the store holds, read again (on replicas, every few seconds and after each
    /// reconnection of the listener): one this Herald did not know, or that reaches further than the
    /// one it knew, is applied; a message missed does not leave a revoked token working here.
    func refresh(_ stored: [StoredRevocation]) {
        for revocation in stored.compactMap(Self.revocation) {
            if let changed = revocations.learn(revocation) { leases.end(coveredBy: changed) }
        }
    }

    /// `{sub?, jti?, issuedBefore?, until?}`, checked: 422 with every problem at once.
    static func revocation(_ body: JSONValue, now: Date) throws -> Revocation {
        var reader = try FieldReader(body)
        if case .object(let members) = body {
            for (name, _) in members where !["sub", "jti", "issuedBefore", "until"].contains(name) {
                reader.fail(name, "is not a field of a revocation: sub, jti, issuedBefore and until are")
            }
        }
        let sub = reader.string("sub", required: false, length: 1...200)
        let jti = reader.string("jti", required: false, length: 1...200)
        let issuedBefore = reader.date("issuedBefore", required: false)
        let until = reader.date("until", required: false)
        if sub != nil, jti != nil { reader.fail("jti", "names one token: give sub or jti, not both") }
        if jti != nil, issuedBefore != nil { reader.fail("issuedBefore", "does not apply to one token (jti), whenever it was issued") }
        if sub == nil, jti == nil, issuedBefore == nil, reader.errors.isEmpty {
            reader.fail("issuedBefore", "is required to revoke every token issued before a time; or give sub or jti")
        }
        let end = until ?? now.addingTimeInterval(longestLife)
        if let until, until <= now { reader.fail("until", "must be later than now: it is when every token revoked has expired") }
        if let until, until > now.addingTimeInterval(longestLife) { reader.fail("until", "must be at most 366 days from now") }
        if let issuedBefore, issuedBefore > end { reader.fail("issuedBefore", "must not be later than until") }
        try reader.finish()
        let scope: Revocation.Scope = if let sub { .subject(sub) } else if let jti { .token(jti) } else { .all }
        // Whole seconds, as `iat` is: a token issued within the current second is covered.
        let thisSecond = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.up))
        return Revocation(scope: scope, issuedBefore: jti != nil ? nil : issuedBefore ?? thisSecond,
                          until: Date(timeIntervalSince1970: end.timeIntervalSince1970.rounded(.up)))
    }

    /// How a revocation reads in answers.
    static func json(_ revocation: Revocation) -> JSONValue {
        var members: [(String, JSONValue)] = []
        switch revocation.scope {
        case .subject(let sub): members.append(("sub", .string(sub)))
        case .token(let jti): members.append(("jti", .string(jti)))
        case .all: break
        }
        if let before = revocation.issuedBefore { members.append(("issuedBefore", .string(Timestamp.format(before)))) }
        members.append(("until", .string(Timestamp.format(revocation.until))))
        return .object(members)
    }

    /// A revocation as the store keeps it, and as the replicas' messages carry it.
    static func stored(_ revocation: Revocation) -> StoredRevocation {
        StoredRevocation(key: revocation.key, issuedBefore: revocation.issuedBefore?.timeIntervalSince1970,
                         until: revocation.until.timeIntervalSince1970)
    }

    /// A stored revocation (read at start, read again on replicas, or from a replica's message).
    static func revocation(_ stored: StoredRevocation) -> Revocation? {
        Revocation(key: stored.key, issuedBefore: stored.issuedBefore.map { Date(timeIntervalSince1970: $0) },
                   until: Date(timeIntervalSince1970: stored.until))
    }
}
