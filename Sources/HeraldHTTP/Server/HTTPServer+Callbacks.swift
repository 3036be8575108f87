import CLinux
import CMicroHTTPD
import Foundation
import HeraldJSON
import HeraldThreads
import Logging

// libmicrohttpd's callbacks. They capture nothing: the server comes through `cls` with `Unmanaged`,
// the request's state through `con_cls`. All run on the daemon's thread.
extension HTTPServer {
    static let accessCallback: MHD_AccessHandlerCallback = { cls, connection, _, method, version, uploadData, uploadSize, contextPointer in
        guard let cls, let connection, let contextPointer, let uploadSize else { return MHD_Result.NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        return server.handle(connection: connection, method: method, version: version,
                             upload: uploadData, uploadSize: uploadSize, context: contextPointer)
    }

    static let completedCallback: MHD_RequestCompletedCallback = { cls, connection, contextPointer, _ in
        if let cls {
            let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
            server.sendDeferredWakeup()
            if let connection {
                let idle = server.configuration.connectionTimeout
                server.connections.requestCompleted(connection, idle: idle > 0 ? .seconds(idle) : nil)
            }
        }
        guard let contextPointer, let raw = contextPointer.pointee else { return }
        contextPointer.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        // Kept for the next request on the request thread; at stop, libmicrohttpd may call this on
        // the stopping one, which only frees it.
        if let cls {
            let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
            if server.requestThread.isCurrent { server.contexts.withValue { $0.give(context) } }
        }
    }

    /// Runs first for every request, with the target as the client sent it: keeps a copy, and keeps
    /// libmicrohttpd from storing the query arguments (Herald parses them from the copy).
    static let targetCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { cls, uri, connection in
        let raw = uri.map { String(cString: $0) } ?? ""
        if let uri { cmhd_drop_query_arguments(uri) }
        guard let cls else { return Unmanaged.passRetained(RequestContext(rawTarget: raw)).toOpaque() }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        if server.requestThread.adoptCurrentThread() {
            // A batch thread (`SCHED_BATCH`), woken, does not take the core from the thread that has it.
            // The writer resumes each connection it answered, and each resume wakes this thread: as an
            // ordinary thread it took the core at each one, so that a batch's answers went out one per
            // switch of threads. Now the writer answers its whole batch, then this thread sends all of
            // them in one pass (`git show dad6eb7:BENCHMARKS.md`, "The request thread as a batch thread").
            _ = clinux_batch_this_thread()
        }
        server.sendDeferredWakeup()
        if let connection { server.connections.requestLine(connection) }
        return Unmanaged.passRetained(server.contexts.withValue { $0.take(rawTarget: raw) }).toOpaque()
    }

    /// Each accepted socket, before it becomes a connection: an address past its rate of new
    /// connections, or holding as many connections and streams as one address may, is closed
    /// unanswered (daemon.c:2480). Trusted proxies carry many clients and pass.
    static let acceptCallback: MHD_AcceptPolicyCallback = { cls, address, _ in
        guard let cls else { return MHD_Result.YES }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        guard server.connectionRate != nil || server.configuration.connectionsPerAddress != nil,
              let peer = address.flatMap(HTTPServer.text(of:)), !server.clients.isTrusted(peer)
        else { return MHD_Result.YES }
        if let limit = server.configuration.connectionsPerAddress,
           server.connections.held(by: peer) + server.streams.held(by: peer) >= limit {
            server.logger.debug("connection refused: this address holds as many connections as one may",
                                metadata: ["http.client": "\(peer)"])
            return MHD_Result.NO
        }
        if let limiter = server.connectionRate, limiter.take(peer) != nil {
            server.logger.debug("connection refused: too many new connections", metadata: ["http.client": "\(peer)"])
            return MHD_Result.NO
        }
        return MHD_Result.YES
    }

    /// A connection starts (its head is due; when room runs short, idle ones are closed for it) or is
    /// closed (before its socket is: daemon.c:3799).
    static let connectionCallback: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        guard let cls, let connection else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        if code.rawValue == 0 { // MHD_CONNECTION_NOTIFY_STARTED
            let socket = cmhd_connection_fd(connection)
            if socket >= 0 { server.connections.started(connection, socket: socket, address: HTTPServer.peer(of: connection)) }
            // Descriptors run short: the connections longest idle make room for this one and the next.
            server.makeRoom()
        } else {
            server.connections.closed(connection)
        }
    }

    /// The connection's peer address as text, or `-`.
    static func peer(of connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        return cmhd_client_address(connection, &buffer, buffer.count) == 0 ? string(buffer) : "-"
    }

    /// An address as text (`cmhd_format_address`), or nil.
    static func text(of address: UnsafePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        guard cmhd_format_address(address, &buffer, buffer.count) == 0 else { return nil }
        return Self.string(buffer)
    }

    /// A NUL-terminated C string in a buffer.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
