import HTTPTypes
import HeraldHTTP
import HeraldJSON

/// For an administrator (a token with `"admin": true`): `GET /streams`, the streams open on this
/// Herald that were opened with a token (by `sub`, topic or client, in pages), and `DELETE
/// /streams/{id}`, which ends one now: its last event is `ended`, and it cannot be renewed. On
/// replicas each answers for its own streams.
struct StreamAdmin: Sendable {
    let access: Access
    let leases: StreamLeases

    func list(_ request: Request) throws -> Response {
        _ = try access.administrator(request)
        let known: Set<String> = ["sub", "topic", "client", "after", "limit"]
        if let unknown = request.query.first(where: { !known.contains($0.name) }) {
            throw Problem(status: .badRequest, detail: "'\(RequestGuard.printable(unknown.name))' is not a parameter of /streams: "
                          + "sub, topic, client, after and limit are")
        }
        let paging = try Paging(request)
        let (sub, topic, client) = (request.query("sub"), request.query("topic"), request.query("client"))
        let chosen = leases.all(after: paging.after).lazy.filter { lease in
            (sub == nil || lease.subject == sub) && (topic == nil || lease.topics.contains { $0 == topic })
                && (client == nil || lease.client == client)
        }
        let page = paging.page(chosen)
        return paging.response("streams", page.entries.map(\.listing), more: page.more, lastKey: page.entries.last?.id, request: request,
                               headers: [.cacheControl: "no-store"])
    }

    func end(_ request: Request) throws -> Response {
        _ = try access.administrator(request)
        let id = request.parameter("id")
        guard let lease = leases.lease(id), !lease.isEnded else {
            throw Problem(status: .notFound, detail: "no open stream '\(RequestGuard.printable(id))' on this Herald")
        }
        lease.end()
        return .empty(status: .noContent)
    }
}
