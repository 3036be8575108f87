import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private let sendFlags = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
import Darwin
private let streamSocket = SOCK_STREAM
private let sendFlags: Int32 = 0  // SO_NOSIGPIPE is set on the socket instead
#endif

/// Plain-HTTP requests on non-blocking sockets that one thread serves with `poll`: a stream costs
/// a socket and a few buffers, not a thread, and its bytes reach its `AsyncStream` as they arrive.
/// POSIX only (sockets and `poll`), so the same code runs on Linux and Apple's platforms.
///
/// Why not URLSession for these: on Linux, FoundationNetworking drives libcurl through a dispatch
/// source per socket, and opening 1,000 streams from one process took 30–65 s of two cores
/// (measured; see `git show dad6eb7:BENCHMARKS.md` "HeraldClient"). `https` still goes through URLSession.
final class SocketReactor: @unchecked Sendable {
    // @unchecked: `links` and `wakeRead` are the reactor thread's alone; `inbox` is under `lock`.
    private let lock = NSLock()
    private var inbox: [(Int, Link?)] = []
    private var links: [Int: Link] = [:]
    private var lastID = 0
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// One for the process: its thread serves every client's plain-HTTP requests.
    static let shared = SocketReactor()

    private init?() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        wakeRead = ends[0]
        wakeWrite = ends[1]
        _ = fcntl(wakeRead, F_SETFL, fcntl(wakeRead, F_GETFL) | O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, fcntl(wakeWrite, F_GETFL) | O_NONBLOCK)
        let thread = Thread { self.loop() }  // the process's: it never ends
        thread.name = "HeraldClient.reactor"
        thread.start()
    }

    /// Connects to `request`'s host and port, sends it, and delivers its answer. The first delivery
    /// is the head, then the body in pieces (chunked coding taken off), then the end.
    func open(_ request: URLRequest) -> AsyncStream<Delivery> {
        let (stream, continuation) = AsyncStream<Delivery>.makeStream()
        // An IPv6 literal's host comes without its brackets on Linux and with them elsewhere.
        guard let url = request.url, let host = url.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) else {
            continuation.yield(.end(URLError(.badURL)))
            continuation.finish()
            return stream
        }
        let port = url.port ?? 80
        let fd: Int32
        do {
            fd = try Self.connect(host: host, port: port)
        } catch {
            continuation.yield(.end(error))
            continuation.finish()
            return stream
        }
        let link = Link(fd: fd, url: url, request: Self.encode(request, host: host, port: port), continuation: continuation,
                        head: request.httpMethod == "HEAD")
        let id = lock.withLock { lastID += 1; return lastID }
        continuation.onTermination = { [weak self] _ in self?.post(id, nil) }
        post(id, link)
        return stream
    }

    /// Hands `link` (or, with nil, the closing of link `id`) to the reactor thread. Links are known
    /// by an id of their own, not their descriptor, which the system reuses once one is closed.
    private func post(_ id: Int, _ link: Link?) {
        lock.withLock { inbox.append((id, link)) }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func loop() {
        var polled: [pollfd] = []
        var polledIDs: [Int] = []
        var drain = [UInt8](repeating: 0, count: 256)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            for (id, link) in lock.withLock({ () -> [(Int, Link?)] in defer { inbox.removeAll() }; return inbox }) {
                if let link { links[id] = link } else if let gone = links.removeValue(forKey: id) { gone.close(nil) }
            }
            polled.removeAll(keepingCapacity: true)
            polledIDs.removeAll(keepingCapacity: true)
            polled.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            polledIDs.append(0)
            for (id, link) in links {
                polled.append(pollfd(fd: link.fd, events: Int16(link.wantsWrite ? POLLOUT : POLLIN), revents: 0))
                polledIDs.append(id)
            }
            let ready = poll(&polled, nfds_t(polled.count), -1)
            if ready < 0 { continue }  // EINTR
            if polled[0].revents != 0 { while read(wakeRead, &drain, drain.count) > 0 {} }
            for index in polled.indices.dropFirst() where polled[index].revents != 0 {
                guard let link = links[polledIDs[index]] else { continue }
                if link.step(&buffer) { links[polledIDs[index]] = nil }
            }
        }
    }

    private static func connect(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocket
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw URLError(.cannotFindHost)
        }
        defer { freeaddrinfo(first) }
        var error = URLError(.cannotConnectToHost)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, streamSocket, 0)
            if fd < 0 { continue }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            if connectSocket(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                return fd
            }
            error = URLError(.cannotConnectToHost)
            close(fd)
        }
        throw error
    }

    /// The request's bytes: its line, `Host`, its headers, and `Connection: close` (one request a
    /// connection, so the end of a body is never in doubt).
    private static func encode(_ request: URLRequest, host: String, port: Int) -> [UInt8] {
        guard let url = request.url else { return [] }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? ""
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var head = "\(request.httpMethod ?? "GET") \(target) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n"
        for (name, value) in request.allHTTPHeaderFields ?? [:] where !["host", "connection", "content-length"].contains(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        let body = request.httpBody ?? Data()
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.httpMethod ?? "GET") { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}

private func connectSocket(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// One request on the reactor: its bytes to send, then its answer as it is parsed.
private final class Link {
    enum Body { case chunked, length(Int), untilClose, none }
    enum Chunk { case size, data(Int), dataEnd, trailers }

    let fd: Int32
    let url: URL
    var unsent: [UInt8]
    let continuation: AsyncStream<Delivery>.Continuation
    let head: Bool
    var connected = false
    var headBytes: [UInt8] = []
    var body: Body?
    var chunk = Chunk.size
    var line: [UInt8] = []
    var closed = false

    init(fd: Int32, url: URL, request: [UInt8], continuation: AsyncStream<Delivery>.Continuation, head: Bool) {
        self.fd = fd
        self.url = url
        self.unsent = request
        self.continuation = continuation
        self.head = head
    }

    var wantsWrite: Bool { !unsent.isEmpty }

    /// Does what the socket is ready for; true when the link is done (and closed).
    func step(_ buffer: inout [UInt8]) -> Bool {
        if !unsent.isEmpty {
            if !connected {
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
                if failure != 0 { return close(URLError(.cannotConnectToHost)) }
                connected = true
            }
            let sent = unsent.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, sendFlags) }
            if sent < 0 {
                return errno == EAGAIN || errno == EINTR ? false : close(URLError(.networkConnectionLost))
            }
            unsent.removeFirst(sent)
            return false
        }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 { return errno == EAGAIN || errno == EINTR ? false : close(URLError(.networkConnectionLost)) }
        if count == 0 {
            if case .untilClose? = body { return close(nil) }
            return close(URLError(.networkConnectionLost))
        }
        return take(buffer[..<count])
    }

    /// Parses what arrived; true when the answer is complete.
    private func take(_ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        if body == nil {
            headBytes.append(contentsOf: rest)
            guard let end = headEnd() else {
                return headBytes.count > 64 * 1024 ? close(URLError(.badServerResponse)) : false
            }
            rest = ArraySlice(headBytes[end...])
            guard let response = parseHead(headBytes[..<end]) else { return close(URLError(.badServerResponse)) }
            headBytes = []
            continuation.yield(.head(response))
            if case .none? = body { return close(nil) }
        }
        switch body {
        case .untilClose?:
            if !rest.isEmpty { continuation.yield(.body(Data(rest))) }
            return false
        case .length(let left)?:
            let piece = rest.prefix(left)
            if !piece.isEmpty { continuation.yield(.body(Data(piece))) }
            body = .length(left - piece.count)
            return left - piece.count == 0 ? close(nil) : false
        case .chunked?:
            return dechunk(rest)
        case .none?, nil:
            return close(nil)
        }
    }

    private func dechunk(_ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        var out = Data()
        while !rest.isEmpty {
            switch chunk {
            case .data(let left):
                let piece = rest.prefix(left)
                out.append(contentsOf: piece)
                rest = rest.dropFirst(piece.count)
                chunk = left - piece.count == 0 ? .dataEnd : .data(left - piece.count)
            case .size, .dataEnd, .trailers:
                guard let newline = rest.firstIndex(of: 0x0A) else {
                    line.append(contentsOf: rest)
                    rest = []
                    continue
                }
                line.append(contentsOf: rest[..<newline])
                rest = rest[(newline + 1)...]
                if line.last == 0x0D { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                switch chunk {
                case .size:
                    let digits = line.prefix { $0 != 0x3B && $0 != 0x20 }
                    guard let size = Int(String(decoding: digits, as: UTF8.self), radix: 16), size >= 0 else {
                        return close(URLError(.badServerResponse))
                    }
                    chunk = size == 0 ? .trailers : .data(size)
                case .dataEnd:
                    chunk = .size
                default:  // trailers end at an empty line
                    if line.isEmpty {
                        if !out.isEmpty { continuation.yield(.body(out)) }
                        return close(nil)
                    }
                }
            }
        }
        if !out.isEmpty { continuation.yield(.body(out)) }
        return false
    }

    private func headEnd() -> Int? {
        guard headBytes.count >= 4 else { return nil }
        for index in 3..<headBytes.count where headBytes[index] == 0x0A && headBytes[index - 1] == 0x0D
            && headBytes[index - 2] == 0x0A && headBytes[index - 3] == 0x0D {
            return index + 1
        }
        return nil
    }

    private func parseHead(_ bytes: ArraySlice<UInt8>) -> HTTPURLResponse? {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let status = lines.first?.split(separator: " ", maxSplits: 2) ?? []
        guard status.count >= 2, status[0].hasPrefix("HTTP/"), let code = Int(status[1]) else { return nil }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name] = fields[name].map { $0 + ", " + value } ?? value
        }
        let field = { (name: String) in fields.first { $0.key.lowercased() == name }?.value }
        if head || code == 204 || code == 304 || (100..<200).contains(code) {
            body = Body.none
        } else if field("transfer-encoding")?.lowercased().contains("chunked") == true {
            body = .chunked
        } else if let length = field("content-length").flatMap({ Int($0) }) {
            body = length == 0 ? Body.none : .length(length)
        } else {
            body = .untilClose
        }
        return HTTPURLResponse(url: url, statusCode: code, httpVersion: String(status[0]), headerFields: fields)
    }

    /// Closes the socket and ends the deliveries, with `error` or cleanly; true, for `step`.
    @discardableResult
    func close(_ error: (any Error)?) -> Bool {
        guard !closed else { return true }
        closed = true
        #if canImport(Glibc)
        Glibc.close(fd)
        #else
        Darwin.close(fd)
        #endif
        continuation.yield(.end(error))
        continuation.finish()
        return true
    }
}
