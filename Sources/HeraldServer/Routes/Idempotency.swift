import Foundation
import HeraldAuth
import HeraldHTTP
import HeraldJSON
import HeraldStore
import HTTPTypes

/// `Idempotency-Key`: a client that sends a change again with the same key (its answer was lost, a
/// connection broke) gets the first answer again instead of a second change. The answer of a change
/// that was made (2xx) is kept with it, in the same batch and so the same transaction, for a day.
struct Idempotency: Sendable {
    /// The key as kept: the client's, scoped to the token's subject when there is one.
    let key: String
    /// Method, path, and digests of the query and the body: the same key with another request is refused.
    let fingerprint: String

    /// The request's key, if it sent one; a malformed one is refused (400), and so is a key sent with a
    /// token that names no subject: such tokens would share one key space, where one client's key
    /// could replay another's answer.
    init?(_ request: Request, token: VerifiedToken?) throws {
        guard let key = request.header(.idempotencyKey) else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Problem(status: .badRequest, detail: "Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        if let token, token.subject == nil {
            throw Problem(status: .badRequest, detail: "Idempotency-Key needs a token with a subject (sub): keys are kept per subject")
        }
        self.key = token?.subject.map { "sub:\($0.utf8.count):\($0)|\(key)" } ?? key
        let query = request.query.map { "\($0.0.utf8.count):\($0.0)=\($0.1)" }.joined(separator: "&")
        fingerprint = "\(request.method.rawValue) \(request.path) \(Self.digest(Array(query.utf8))) \(Self.digest(request.body))"
    }

    static func digest(_ bytes: [UInt8]) -> String { Fingerprint.hex(bytes) }

    /// The kept answer for this key, as it is given again, or the refusal of a key used for another
    /// request (422).
    func replay(_ kept: KeptAnswer) -> Response {
        guard kept.fingerprint == fingerprint else {
            let first = kept.fingerprint.split(separator: " ").prefix(2).joined(separator: " ")
            let message = "was used for another request (\(first)); use a new key"
            return Problem(status: .unprocessableContent, detail: "this Idempotency-Key \(message)",
                           extra: [("errors", [["field": "Idempotency-Key", "message": .string(message)]])]).response
        }
        var headers = HTTPFields()
        for pair in kept.headers where pair.count == 2 {
            if let name = HTTPField.Name(pair[0]) { headers.append(HTTPField(name: name, value: pair[1])) }
        }
        headers[.idempotencyReplayed] = "true"
        return Response(status: HTTPResponse.Status(code: kept.status), headers: headers, body: .bytes(kept.body))
    }

    /// The fields a replay gives again: the first answer's event id and version among them.
    static let keptFields: [HTTPField.Name] = [.location, .contentType, .heraldEventID, .eTag]

    /// What is kept of `response`: a change that was made, with a body in hand.
    func answer(_ response: Response, at now: Date) -> KeptAnswer? {
        guard response.status.kind == .successful, case .bytes(let body) = response.body else { return nil }
        let kept = response.headers.filter { Self.keptFields.contains($0.name) }.map { [$0.name.rawName, $0.value] }
        return KeptAnswer(key: key, fingerprint: fingerprint, status: response.status.code, headers: kept, body: body, at: now)
    }
}
