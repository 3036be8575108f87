import Foundation
import HTTPTypes
import HeraldAuth
import HeraldDomain
import HeraldHTTP
import HeraldJSON

/// Who may write and who may watch. With no key Herald is open: anyone may do anything, and only
/// the write rate per address is limited. With a key, a write needs `Authorization: Bearer <jwt>`
/// whose `herald.publish` patterns name the topic written, and a stream needs a token whose
/// `herald.subscribe` patterns name every topic watched (unless streams are public).
struct Access: Sendable {
    /// A request's author, once let through: the checked token, or nil when Herald is open.
    struct Caller: Sendable {
        let token: VerifiedToken?
    }

    let verifier: TokenVerifier?
    /// Tokens an administrator revoked: refused wherever a token is read.
    let revocations: Revocations
    /// Streams need no token.
    let publicStreams: Bool
    /// Writes per token (its subject) or client address; nil: no limit.
    let writeRate: RateLimiter?
    let now: @Sendable () -> Date

    /// The name of the cookie a browser's EventSource may carry the token in.
    static let cookie = "herald_token"

    /// Whether writes need a token.
    var isOpen: Bool { verifier == nil }

    /// Lets a write to `topic` through, or throws its 401, 403 or 429. Only the `Authorization`
    /// header counts for a write: a cookie would let any page the user visits write in their name.
    func writer(_ request: Request, topic: String) throws -> Caller {
        var caller = Caller(token: nil)
        var rateKey = "address " + request.client
        if let verifier {
            guard let token = Self.bearer(request) else { throw Self.unauthorized("a change needs a token: Authorization: Bearer <jwt>") }
            let verified = try verify(token, with: verifier)
            guard verified.grants.mayPublish(topic) else {
                throw Problem(status: .forbidden, detail: "the token may not publish to '\(RequestGuard.printable(topic))'",
                              extra: [("topic", .string(topic))])
            }
            caller = Caller(token: verified)
            rateKey = verified.subject.map { "subject " + $0 } ?? "token " + token
        }
        if let writeRate, let wait = writeRate.take(rateKey) {
            throw Problem(status: .tooManyRequests, detail: "more than \(writeRate.rate) changes a second from one "
                          + (verifier == nil ? "address" : "token") + "; slow down",
                          headers: [.retryAfter: String(wait.retryAfterSeconds)])
        }
        return caller
    }

    /// Lets a stream of `topics` open, or throws its 401 or 403; returns the token, whose `exp` is when
    /// the stream must end (nil: no token is needed). A stream's token may come as the header, the
    /// `herald_token` cookie or `?access_token=` (EventSource cannot set headers).
    func watcher(_ request: Request, topics: [NamedTopic]) throws -> VerifiedToken? {
        guard let verifier, !publicStreams else { return nil }
        guard let token = Self.bearer(request) ?? Self.cookie(request) ?? request.query("access_token") else {
            throw Self.unauthorized("a stream needs a token: Authorization: Bearer <jwt>, the \(Self.cookie) cookie, or ?access_token=")
        }
        let verified = try verify(token, with: verifier)
        try mayWatch(verified, topics)
        return verified
    }

    /// Which topics a caller of `/subjects` may see named and counted: all when streams need no token;
    /// with a key, those its token may watch, and none without a token (401 for one that does not check out).
    func visibleTopics(_ request: Request) throws -> (@Sendable (String) -> Bool)? {
        guard let verifier, !publicStreams else { return nil }
        guard let token = Self.bearer(request) ?? Self.cookie(request) ?? request.query("access_token") else { return { _ in false } }
        let verified = try verify(token, with: verifier)
        return { topic in (try? mayWatch(verified, [NamedTopic(topic)])) != nil }
    }

    /// Throws 403 unless `token`'s grants cover every one of `topics`.
    func mayWatch(_ token: VerifiedToken, _ topics: [NamedTopic]) throws {
        let allowed = { (named: NamedTopic) in
            named.topic?.isCollection == true ? token.grants.maySubscribe(collection: named.text) : token.grants.maySubscribe(named.text)
        }
        if let denied = topics.first(where: { !allowed($0) })?.text {
            throw Problem(status: .forbidden, detail: "the token may not subscribe to '\(RequestGuard.printable(denied))'",
                          extra: [("topic", .string(denied))])
        }
    }

    /// An administrator's token, from `Authorization: Bearer` only: 404 without a key (no stream has a
    /// token), 401 without a token or with one refused, 403 for a token that is not an administrator's.
    func administrator(_ request: Request) throws -> VerifiedToken {
        guard verifier != nil else { throw Problem(status: .notFound, detail: "Herald has no token key, so it keeps no list of streams") }
        let token = try bearerToken(request)
        guard token.grants.admin else { throw Problem(status: .forbidden, detail: "only an administrator's token (\"admin\": true) may see or end streams") }
        return token
    }

    /// A token from `Authorization: Bearer` only, checked (401 when missing or refused): a renewal's.
    func bearerToken(_ request: Request) throws -> VerifiedToken {
        guard let verifier else { throw Problem(status: .notFound, detail: "Herald has no token key, so no stream has a token to renew") }
        guard let token = Self.bearer(request) else { throw Self.unauthorized("a renewal needs the fresh token: Authorization: Bearer <jwt>") }
        return try verify(token, with: verifier)
    }

    private func verify(_ token: String, with verifier: TokenVerifier) throws -> VerifiedToken {
        let now = now()
        let verified: VerifiedToken
        do {
            verified = try verifier.verify(token, at: now)
        } catch {
            throw Self.unauthorized(error.description, invalid: true)
        }
        if let revocation = revocations.covering(verified, at: now) {
            throw Self.unauthorized("the token was revoked: \(revocation.reason)", invalid: true)
        }
        return verified
    }

    /// 401 with the challenge RFC 6750 §3 asks for; `invalid`: a token came and was refused.
    static func unauthorized(_ detail: String, invalid: Bool = false) -> Problem {
        let challenge = invalid ? "Bearer realm=\"herald\", error=\"invalid_token\"" : "Bearer realm=\"herald\""
        return Problem(status: .unauthorized, detail: detail, headers: [.wwwAuthenticate: challenge])
    }

    /// The token of `Authorization: Bearer <token>` (the scheme in any case, RFC 9110 §11.1).
    static func bearer(_ request: Request) -> String? {
        guard let value = request.header(.authorization) else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingSpacesAndTabs
        return token.isEmpty ? nil : token
    }

    /// The `herald_token` cookie, from any `Cookie` header.
    static func cookie(_ request: Request) -> String? {
        for value in request.headers[values: .cookie] {
            for pair in value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingSpacesAndTabs == cookie {
                    let value = parts[1].trimmingSpacesAndTabs
                    if !value.isEmpty { return value }
                }
            }
        }
        return nil
    }
}
