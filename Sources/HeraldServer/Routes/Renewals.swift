import Foundation
import HTTPTypes
import HeraldAuth
import HeraldHTTP

/// `POST /streams/{id}/token` with `Authorization: Bearer <fresh token>`: the stream `id` (its `stream`
/// event names it) now ends at the fresh token's `exp`. The fresh token must be for the same subject
/// as the stream's first, and its grants must still cover every topic the stream watches (403
/// otherwise). The stream goes on: no event is lost, and it does not reconnect.
struct Renewals: Sendable {
    let access: Access
    let leases: StreamLeases
    /// Replicas: a stream this one does not hold may be another's.
    let forwarding: RenewalForwarding?

    func renew(_ request: Request) throws -> Response {
        let id = request.parameter("id")
        let token = try access.bearerToken(request)
        guard let lease = leases.lease(id) else {
            if let forwarding { return .later { answer in forwarding.renew(id, token: token, answer: answer) } }
            throw Problem(status: .notFound, detail: "no open stream '\(RequestGuard.printable(id))': it ended")
        }
        try Self.renew(lease, with: token, access: access)
        return .empty(status: .noContent)
    }

    /// Moves `lease`'s end to `token`'s `exp`, or throws 403 for another subject, for a token without
    /// `sub` whose grants are not the first token's, or for grants that no longer cover the stream. The
    /// 403 names no one: the caller need not learn whose stream it is.
    static func renew(_ lease: StreamLease, with token: VerifiedToken, access: Access) throws {
        guard token.subject == lease.subject else {
            throw Problem(status: .forbidden, detail: "the fresh token's sub is not the one the stream was opened with")
        }
        guard lease.subject != nil || token.grants == lease.grants else {
            throw Problem(status: .forbidden, detail: "a stream opened with a token without sub renews only with a token of the same grants")
        }
        try access.mayWatch(token, lease.topics.map(NamedTopic.init))
        guard lease.renew(with: token) else {
            throw Problem(status: .notFound, detail: "no open stream '\(RequestGuard.printable(lease.id))': an administrator ended it")
        }
    }
}
