import Foundation
import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON
import HeraldStore
import Logging

/// Builds the router; every handler's `DomainError` becomes its problem response here, in one place.
/// What went wrong underneath is logged here with the request's id, which the problem carries too.
struct Routes {
    /// What a route that changes state does on the writer: the change, and the answer it makes.
    typealias Change = @Sendable (ChangeBatch) throws(DomainError) -> Response

    private(set) var router: Router
    /// The reads `QuickReads` may answer, each also a route of `router` (see `read(_:parameter:kept:)`).
    private(set) var quickReads: [(pattern: String, read: QuickReads.Read)] = []
    private let logger: Logger
    let journal: Journal
    let access: Access
    /// Other replicas write the store too: a change may name what this one has not caught up with
    /// yet, so whether it exists is decided on the writer (after catching up), not before.
    var replicated: Bool { journal.store?.isShared ?? false }

    init(logger: Logger, journal: Journal, access: Access) {
        self.logger = logger
        self.journal = journal
        self.access = access
        router = Router { request, error in
            logger.error("unexpected error", metadata: ["http.request_id": "\(request.id)", "error": "\(error)"])
        }
    }

    mutating func add(_ method: HTTPRequest.Method, _ pattern: String, _ handler: @escaping @Sendable (Request) throws -> Response) {
        let logger = logger
        router.add(method, pattern) { request in
            do {
                return try handler(request)
            } catch let error as DomainError {
                throw Self.problem(error, request: request, logger: logger)
            }
        }
    }

    /// A route that changes state. `handler` reads and checks the request on the server's thread and
    /// returns the change, which runs on the writer; the answer comes once the change is durable and
    /// published. Meanwhile the connection waits and the server serves others.
    ///
    /// - Parameter topic: the topic the change publishes to, with the pattern's parameters (`units/{id}`):
    ///   a token must be allowed to publish there (see `Access`), before the body is read.
    ///
    /// With an `Idempotency-Key`, a change made before with the same key is not made again: its kept
    /// answer is given (see `Idempotency`).
    mutating func write(_ method: HTTPRequest.Method, _ pattern: String, topic: String,
                        _ handler: @escaping @Sendable (Request, Access.Caller) throws -> Change) {
        let (journal, logger, access) = (journal, logger, access)
        add(method, pattern) { request in
            let caller = try access.writer(request, topic: Self.topic(topic, of: request))
            let idempotency = try Idempotency(request, token: caller.token)
            let handled = try handler(request, caller)
            // `Herald-Event-ID`: the event the change published (the last id before it when it published
            // none), so a client knows when its own change reaches a stream; a kept answer keeps it.
            let made: Change = { batch throws(DomainError) -> Response in
                var response = try handled(batch)
                response.headers[.heraldEventID] = String(journal.lastEventID(in: batch))
                return response
            }
            let change: Change = if let idempotency {
                { batch throws(DomainError) -> Response in
                    if let kept = try journal.keptAnswer(for: idempotency.key, in: batch) { return idempotency.replay(kept) }
                    let response = try made(batch)
                    if let answer = idempotency.answer(response, at: journal.now) { journal.keep(answer, in: batch) }
                    return response
                }
            } else {
                made
            }
            return .later { answer in
                journal.writer.submit(change) { result in
                    switch result {
                    case .success(let response): answer(response)
                    case .failure(let error): answer(Self.problem(error, request: request, logger: logger).response)
                    }
                }
            }
        }
    }

    /// A route that reads state: its answer carries `Herald-Event-ID`, the last event the state it read
    /// reflects (a stream opened with `Last-Event-ID` set to it misses and repeats nothing). An answer
    /// with an `ETag` is 304 when `If-None-Match` names it.
    mutating func read(_ pattern: String, _ handler: @escaping @Sendable (Request) throws -> Response) {
        let journal = journal
        add(.get, pattern) { request in
            var (response, eventID) = try journal.reading { try handler(request) }
            // The field itself, not the subscript's join of every ETag field (3 % of a GET). A list has
            // no version of its own: its tag is its bytes' (each page, each language its own).
            var listTag: String?
            if !response.headers.contains(where: { $0.name == .eTag }), case .bytes(let bytes) = response.body { listTag = Fingerprint.tag(bytes) }
            let etag = listTag ?? response.headers.first(where: { $0.name == .eTag })?.value
            // `If-Match` on a read (RFC 9110 §13.1.1): answered only when it names the version read.
            if request.header(.ifMatch) != nil { try Preconditions(request).require(etag, request.path) }
            response.headers.append(HTTPField(name: .heraldEventID, value: String(eventID)))
            // State changes at any moment: a cache must ask again (with its ETag) before it reuses one.
            if response.headers[.cacheControl] == nil { response.headers.append(HTTPField(name: .cacheControl, value: "no-cache")) }
            if let listTag { response.headers.append(HTTPField(name: .eTag, value: listTag)) }
            // A malformed If-None-Match names no version: the state is sent.
            if let etag, Preconditions(request).notModified(etag) {
                // libmicrohttpd sends the 200's length and never the body (see `PageFile`).
                response.status = .notModified
                response.headers[.contentType] = nil
            }
            return response
        }
    }

    /// A read of a subject kept encoded: the route, and the same read for `QuickReads`, so that both
    /// answer from one function. `kept` gives the subject's JSON and entity tag for the value of the
    /// pattern's parameter (`name`; "" without one), and whether they stay so until the subject
    /// changes (`lasting`: no time in them), or throws (a 404 on the general path, which a quick read
    /// leaves to it).
    mutating func read(_ pattern: String, parameter name: String?,
                       kept: @escaping @Sendable (String) throws(DomainError) -> (bytes: [UInt8], etag: String, lasting: Bool)) {
        read(pattern) { request in
            let (bytes, etag, _) = try kept(name.map(request.parameter) ?? "")
            return .json(bytes: bytes, etag: etag)
        }
        let journal = journal
        quickReads.append((pattern, { parameter in
            let (read, eventID, generation) = journal.readingGeneration { try? kept(parameter ?? "") }
            guard let read else { return nil }
            return QuickReads.Answer(route: pattern, body: read.bytes, etag: read.etag, eventID: eventID,
                                     generation: read.lasting ? generation : nil)
        }))
    }

    /// `template` with each `{name}` replaced by that path parameter.
    /// A name the request has no parameter for stays as written. By hand: Foundation's
    /// `replacingOccurrences` was 6 % of a `PUT /units/{id}` (and made a bridged string).
    static func topic(_ template: String, of request: Request) -> String {
        guard template.utf8.contains(UInt8(ascii: "{")) else { return template }
        var topic = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            topic += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            topic += request.parameters[name] ?? String(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return topic + rest
    }

    static func problem(_ error: DomainError, request: Request, logger: Logger) -> Problem {
        if let cause = error.cause {
            // The problem names the request too (the server adds its id to every problem).
            logger.error("request failed", metadata: ["http.request_id": "\(request.id)", "error": "\(cause)"])
        }
        return Problem(error)
    }
}

extension Problem {
    /// The problem for a domain refusal: 404 unknown id, 409 conflict, 422 invalid values, 503 a store
    /// that cannot write now (busy, full, read-only), 500 a damaged one.
    init(_ error: DomainError) {
        // A refused bid says the price, and the lowest bid that would be taken or the winner.
        let extra: [(String, JSONValue)] = error.auction.map { auction in
            [("price", .int(auction.price))]
                + (auction.closed ? [("winner", .optional(auction.winner))] : auction.minimumBid.map { [("minimumBid", .int($0))] } ?? [])
        } ?? []
        switch error.kind {
        case .notFound:
            self.init(status: .notFound, detail: error.message, extra: extra)
        case .conflict:
            self.init(status: .conflict, detail: error.message, extra: extra)
        case .unavailable:
            self.init(status: .serviceUnavailable, detail: error.message, headers: [.retryAfter: "1"])
        case .failed:
            self.init(status: .internalServerError, detail: error.message)
        case .preconditionFailed:
            // The current version, so the client can read what changed and decide again.
            self.init(status: .preconditionFailed, detail: error.message, extra: [("etag", .optional(error.currentTag))],
                      headers: error.currentTag.map { [.eTag: $0] } ?? [:])
        case .invalid:
            let fields = error.fields.map { JSONValue.object([("field", .string($0.field)), ("message", .string($0.message))]) }
            self.init(status: .unprocessableContent, detail: error.message, extra: [("errors", .array(fields))] + extra)
        }
    }
}

extension Request {
    /// The body as JSON: 415 unless it is declared JSON, 400 when it does not parse.
    func json() throws -> JSONValue {
        let type = header(.contentType)?.split(separator: ";").first?.trimmingSpacesAndTabs.lowercased() ?? ""
        guard type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json")) else {
            throw Problem(status: .unsupportedMediaType, detail: "the body must be application/json, not '\(type.isEmpty ? "(none)" : type)'")
        }
        do {
            return try JSONValue.parse(body)
        } catch {
            throw Problem(status: .badRequest, detail: error.reason)
        }
    }
}
