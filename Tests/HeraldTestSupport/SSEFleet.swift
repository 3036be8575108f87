import Foundation

/// Many SSE clients on non-blocking sockets served by one `poll` loop: no thread per client.
public final class SSEFleet {
    private struct Client {
        let fd: Int32
        var http = HTTPResponseParser()
        var sse = SSEParser()
        var events: [SSEEvent] = []
        var status: Int?
        var closed = false
    }

    private var clients: [Client] = []

    /// Connects `count` clients to `path`, each sending its request at once.
    public init(port: Int, path: String, count: Int) throws {
        clients.reserveCapacity(count)
        for _ in 0..<count {
            let socket = try Socket(port: port)
            let fd = dup(socket.fd)
            socket.close()
            try Socket.sendAll(fd: fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            clients.append(Client(fd: fd))
        }
    }

    deinit { close() }

    public var count: Int { clients.count }
    /// Events each client has received, in order.
    public var events: [[SSEEvent]] { clients.map(\.events) }
    public var statuses: [Int?] { clients.map(\.status) }
    public var closedCount: Int { clients.count { $0.closed } }
    /// Clients whose response ended as HTTP says it should (the chunked body's last chunk).
    public var cleanEndCount: Int { clients.count { $0.http.complete } }

    /// Reads from every client until `done` holds or `timeout` passes. Returns whether `done` held.
    @discardableResult
    public func pump(timeout: Double, until done: (SSEFleet) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var fds = clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !done(self) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 0.2) * 1000))
            guard ready > 0 else { continue }
            for index in fds.indices where fds[index].revents != 0 {
                fds[index].revents = 0
                let count = buffer.withUnsafeMutableBytes { recv(fds[index].fd, $0.baseAddress, 65536, 0) }
                if count == 0 || (count < 0 && errno != EAGAIN) {
                    clients[index].closed = true
                    fds[index].fd = -1
                    continue
                }
                guard count > 0 else { continue }
                do { try clients[index].http.feed(Array(buffer[0..<count])) } catch { clients[index].closed = true }
                clients[index].status = clients[index].http.head?.status
                let body = clients[index].http.body
                clients[index].http.body.removeAll(keepingCapacity: true)
                clients[index].events.append(contentsOf: clients[index].sse.feed(body))
            }
        }
        return true
    }

    public func close() {
        for index in clients.indices where !clients[index].closed {
            Glibc.close(clients[index].fd)
            clients[index].closed = true
        }
    }
}

extension Socket {
    static func sendAll(fd: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestError("send failed: errno \(errno)") }
            offset += sent
        }
    }
}
