import Foundation
import HTTPTypes
import HeraldAuth
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import HeraldThreads

/// A renewal sent to a replica that does not hold the stream goes to every replica through
/// PostgreSQL (`PostgresListener.send`): the one that holds it checks the fresh token there, renews,
/// and answers the same way; the asking replica answers its client with that. No replica that holds the
/// stream answers within `wait`: 404.
final class RenewalForwarding: Sendable {
    private let listener: PostgresListener
    private let access: Access
    private let leases: StreamLeases
    private let waiting = Lock<[String: Waiter]>([:])

    /// An answer function kept in a struct (see `Writer.Hooks`).
    private struct Waiter: Sendable {
        let answer: @Sendable (Response) -> Void
    }

    /// How long a forwarded renewal waits for the replica that holds the stream.
    static let wait: TimeInterval = 2
    /// Its wait runs out on the timer thread every clock shares (`herald-timers`).
    private let clock = SystemClock()

    init(listener: PostgresListener, access: Access, leases: StreamLeases) {
        (self.listener, self.access, self.leases) = (listener, access, leases)
    }

    /// Asks the other replicas to renew stream `id` with `token` (checked here); `answer` gets their
    /// answer, once, on another thread. What crosses the database is the token's verified claims, never
    /// the token itself, in a sealed message (`ChannelSeal`).
    func renew(_ id: String, token: VerifiedToken, answer: @escaping @Sendable (Response) -> Void) {
        var generator = SystemRandomNumberGenerator()
        let reply = String(generator.next() as UInt64, radix: 36)
        let message = JSONValue.object([
            ("renew", .string(id)), ("sub", token.subject.map { .string($0) } ?? .null),
            ("exp", .int(Int64((token.expires.timeIntervalSince1970 * 1_000).rounded()))),
            ("publish", .array(token.grants.publish.map { .string($0) })), ("subscribe", .array(token.grants.subscribe.map { .string($0) })),
            ("iat", token.issuedAt.map { .int(Int64(($0.timeIntervalSince1970 * 1_000).rounded(.down))) } ?? .null),
            ("jti", token.id.map { .string($0) } ?? .null), ("reply", .string(reply)),
        ]).bytes
        guard listener.send(String(decoding: message, as: UTF8.self)) else {
            answer(Problem(status: .contentTooLarge, detail: "the token's grants are too long to send to the replica that holds the stream").response)
            return
        }
        waiting.withLock { $0[reply] = Waiter(answer: answer) }
        _ = clock.schedule(at: clock.now.addingTimeInterval(Self.wait)) { [weak self] in
            guard let waiter = self?.waiting.withLock({ $0.removeValue(forKey: reply) }) else { return }
            waiter.answer(Problem(status: .notFound, detail: "no Herald holds an open stream '\(RequestGuard.printable(id))': it ended").response)
        }
    }

    /// A message from a replica's listener (this one's included): a renewal to make here, or the answer
    /// to one this replica asked for. False: not a renewal's message.
    func received(_ message: JSONValue) -> Bool {
        if let id = message["renew"]?.stringValue, let reply = message["reply"]?.stringValue {
            guard let lease = leases.lease(id) else { return true }  // another replica's stream, or none
            var status = 204, detail = ""
            do {
                guard let token = Self.claims(message) else { throw Problem(status: .badRequest, detail: "the forwarded claims do not read") }
                try Renewals.renew(lease, with: token, access: access)
            } catch let problem as Problem {
                (status, detail) = (problem.status.code, problem.detail)
            } catch {
                (status, detail) = (500, "the renewal failed")
            }
            listener.send(String(decoding: JSONValue.object([("answer", .string(reply)), ("status", .integer(status)),
                                                             ("detail", .string(detail))]).bytes, as: UTF8.self))
        } else if let reply = message["answer"]?.stringValue, let status = message["status"]?.intValue {
            guard let waiter = waiting.withLock({ $0.removeValue(forKey: reply) }) else { return true }
            let detail = message["detail"]?.stringValue ?? ""
            waiter.answer(status == 204 ? .empty(status: .noContent)
                          : Problem(status: HTTPResponse.Status(code: Int(status)), detail: detail).response)
        } else {
            return false
        }
        return true
    }

    /// The verified claims a replica forwarded (the message is sealed: it came from a replica).
    private static func claims(_ message: JSONValue) -> VerifiedToken? {
        guard let milliseconds = message["exp"]?.intValue, case .array(let publish)? = message["publish"],
              case .array(let subscribe)? = message["subscribe"] else { return nil }
        let subject = message["sub"]?.stringValue
        guard subject != nil || message["sub"] == .null else { return nil }
        return VerifiedToken(subject: subject, expires: Date(timeIntervalSince1970: Double(milliseconds) / 1_000),
                             grants: Grants(publish: publish.compactMap(\.stringValue), subscribe: subscribe.compactMap(\.stringValue)),
                             issuedAt: message["iat"]?.intValue.map { Date(timeIntervalSince1970: Double($0) / 1_000) }, id: message["jti"]?.stringValue)
    }
}
