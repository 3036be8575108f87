import HeraldThreads
import HTTPTypes

import CMicroHTTPD
import Synchronization

/// A deferred answer on its way: made on another thread, it is kept here and the suspended connection
/// resumed, and libmicrohttpd then calls the access handler again, which queues it.
final class PendingAnswer: Sendable {
    private struct Connection: @unchecked Sendable {
        // Only passed to `MHD_resume_connection`, which any thread may call (microhttpd.h:3273).
        let raw: OpaquePointer
    }

    private let connection: Connection
    /// Headers added to the deferred response on its way out (CORS): the answer gets them too.
    private let headers: HTTPFields
    private let slot = Lock<(answer: Response?, given: Bool)>((nil, false))

    init(connection: OpaquePointer, headers: HTTPFields) {
        self.connection = Connection(raw: connection)
        self.headers = headers
    }

    /// Keeps the answer and resumes the connection; a second answer is ignored, as resuming a
    /// connection that is not suspended is undefined (microhttpd.h:3273–3276).
    func give(_ answer: Response) {
        var answer = answer
        answer.headers.append(contentsOf: headers)
        let first = slot.withLock { slot -> Bool in
            guard !slot.given else { return false }
            slot = (answer, true)
            return true
        }
        if first { MHD_resume_connection(connection.raw) }
    }

    /// The answer, once given.
    func take() -> Response? { slot.withLock { $0.answer } }
}
