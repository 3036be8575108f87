import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One stream's life across its connections: it opens `/events` for the topics, decodes the events
/// as they arrive, and when the connection ends for any reason but a refusal or an administrator's
/// `ended`, opens another with `Last-Event-ID` set to the last id it saw, after the server's `retry:`.
struct Connection: Sendable {
    let client: HeraldClient
    let topics: [String]
    let after: String?

    /// Runs until the task is cancelled, or throws the server's refusal.
    func run(_ deliver: @escaping @Sendable (HeraldEvent) -> Void) async throws {
        var lastEventID = after
        var retry: Duration?
        var failures = 0
        let decoder = JSONDecoder()
        while !Task.isCancelled {
            var request = URLRequest(url: eventsURL())
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
            if let lastEventID { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
            if let token = try await client.token?() { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }

            var sse = SSEDecoder(lastEventID: lastEventID)
            var refusal: (HTTPURLResponse, Data)?
            var delivered = false
            var expired = false
            /// An administrator ended the stream (`ended`) or revoked its token (`revoked`): final, the sequence ends with this.
            var ended: HeraldProblem?
            var renewal: Task<Void, Never>?
            for await delivery in client.transport.open(request) {
                switch delivery {
                case .head(let head) where head.statusCode != 200:
                    refusal = (head, Data())
                case .head:
                    break
                case .body(let data) where refusal != nil:
                    refusal?.1.append(data)
                case .body(let data):
                    var events: [ServerSentEvent] = []
                    sse.feed(data) { events.append($0) }
                    // `ready` only names where the stream starts (its id is taken below): no change to deliver.
                    for wire in events where wire.name != "ready" {
                        guard let event = try? HeraldEvent.decode(id: wire.id, name: wire.name, data: Data(wire.data.utf8), with: decoder) else {
                            continue  // not JSON at all: nothing Herald sends
                        }
                        switch event.kind {
                        case .tokenExpiring(let lease):
                            // Once for each end: a renewed stream is warned again before its new end.
                            renewal?.cancel()
                            renewal = renew(lease)
                        case .expired: expired = true
                        case .other(name: "ended", let data):
                            let reason = if case .object(let fields) = data, case .string(let text)? = fields["reason"] { text } else { "" }
                            ended = HeraldProblem(type: "/problems/stream-ended", title: "Stream Ended", status: 410,
                                                  detail: reason.isEmpty ? "an administrator ended this stream" : reason)
                        case .other(name: "revoked", let data):
                            let reason = if case .object(let fields) = data, case .string(let text)? = fields["reason"] { text } else { "" }
                            ended = HeraldProblem(type: "/problems/token-revoked", title: "Token Revoked", status: 401,
                                                  detail: reason.isEmpty ? "an administrator revoked this token" : reason)
                        default: break
                        }
                        deliver(event)
                        delivered = true
                    }
                    // The position moves only past whole events, so a reconnect resumes after the last one.
                    lastEventID = sse.lastEventID
                case .end:
                    break
                }
            }
            renewal?.cancel()
            if let milliseconds = sse.retry { retry = .milliseconds(milliseconds) }
            if Task.isCancelled { return }
            // Not reconnected: the token still opens streams, but the administrator meant this one to end.
            if let ended { throw ended }

            var wait = retry ?? client.defaultRetry
            if let (head, body) = refusal {
                let problem = HeraldClient.problem(head, body)
                // Refusals that another try cannot mend end the sequence; a limit or a draining server
                // says when to come back.
                guard [408, 425, 429].contains(head.statusCode) || head.statusCode >= 500 else { throw problem }
                if let seconds = problem.retryAfter { wait = max(wait, .seconds(seconds)) }
            }
            if expired {
                failures = 0
                continue  // a fresh token at once: nothing is lost, the server kept the events
            }
            failures = delivered && refusal == nil ? 0 : failures + 1
            try await Task.sleep(for: backoff(wait, failures: failures))
        }
    }

    /// `base` doubled for every failure in a row, up to the client's maximum, then a random part of
    /// it (from half to all), so that clients a restart disconnected together do not return together.
    func backoff(_ base: Duration, failures: Int) -> Duration {
        var wait = base
        for _ in 0..<min(failures, 16) where wait < client.maximumRetry { wait *= 2 }
        wait = min(wait, max(client.maximumRetry, base))
        return wait * Double.random(in: 0.5...1.0)
    }

    /// Gives the stream a fresh token before it expires (`POST /streams/{id}/token`). If that fails,
    /// the stream ends at its `exp` with `expired` and the client reconnects with a fresh token.
    private func renew(_ lease: StreamLease) -> Task<Void, Never> {
        let client = self.client
        return Task {
            _ = try? await client.exchange("POST", "streams/" + HeraldClient.segment(lease.stream) + "/token", body: nil)
        }
    }

    private func eventsURL() -> URL {
        var components = URLComponents(url: client.address("events"), resolvingAgainstBaseURL: false)
        components?.queryItems = topics.map { URLQueryItem(name: "topic", value: $0) }
        // `;` separates a collection's filter; URLComponents leaves it as it is.
        return components?.url ?? client.url
    }
}
