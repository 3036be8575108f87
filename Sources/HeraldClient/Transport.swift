import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a streaming request delivers, in order: its head, its body as it arrives, and its end.
enum Delivery: Sendable {
    case head(HTTPURLResponse)
    case body(Data)
    case end((any Error)?)
}

/// Plain HTTP through the client's `SocketReactor`; anything else (`https`) through one URLSession for a client, whose data delegate hands each task's bytes to that task's
/// `AsyncStream` as they arrive, so a stream is read incrementally and never buffered whole. The
/// delegate queue is serial: a task's deliveries keep their order.
final class Transport: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `receivers` is only touched under `lock`; `session` is set once in init.
    private let lock = NSLock()
    private var receivers: [Int: AsyncStream<Delivery>.Continuation] = [:]
    private(set) var session: URLSession!
    /// Plain HTTP goes here; nil if its pipe could not be made (then URLSession takes everything).
    private let reactor = SocketReactor.shared

    init(configuration: URLSessionConfiguration) {
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "HeraldClient.transport"
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// Starts `request`; cancelling the iteration (or the task iterating) cancels the request.
    func open(_ request: URLRequest) -> AsyncStream<Delivery> {
        if request.url?.scheme?.lowercased() == "http", let reactor { return reactor.open(request) }
        let (stream, continuation) = AsyncStream<Delivery>.makeStream()
        let task = session.dataTask(with: request)
        lock.withLock { receivers[task.taskIdentifier] = continuation }
        continuation.onTermination = { [weak self] _ in
            task.cancel()
            self?.lock.withLock { _ = self?.receivers.removeValue(forKey: task.taskIdentifier) }
        }
        task.resume()
        return stream
    }

    func invalidate() { session.invalidateAndCancel() }

    private func receiver(_ task: URLSessionTask) -> AsyncStream<Delivery>.Continuation? {
        lock.withLock { receivers[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        if let response = response as? HTTPURLResponse { receiver(dataTask)?.yield(.head(response)) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        receiver(dataTask)?.yield(.body(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let continuation = lock.withLock { receivers.removeValue(forKey: task.taskIdentifier) }
        continuation?.yield(.end(error))
        continuation?.finish()
    }
}
