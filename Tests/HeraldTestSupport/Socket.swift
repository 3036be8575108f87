import Foundation

/// A blocking TCP connection to 127.0.0.1 with a receive timeout: the bottom of the test clients.
public final class Socket {
    public let fd: Int32
    private var closed = false

    /// - Parameter receiveBuffer: a small kernel receive buffer (set before connecting, as TCP needs),
    ///   so a client that stops reading fills it quickly.
    public init(port: Int, host: String = "127.0.0.1", timeout: Double = 5, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket() failed: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let error = errno
            Glibc.close(fd)
            throw TestError("connect to \(host):\(port) failed: errno \(error)")
        }
        setTimeout(timeout)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    public func setTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestError("send failed: errno \(errno)") }
            offset += sent
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads what is available (blocking up to the timeout). Empty: the peer closed (or reset).
    /// Throws on timeout.
    public func receive(max: Int = 65536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        if count < 0, errno == ECONNRESET { return [] }
        if count < 0 {
            throw errno == EAGAIN || errno == EWOULDBLOCK ? TestError.timeout : TestError("recv failed: errno \(errno)")
        }
        return Array(buffer[0..<count])
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}

public struct TestError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
    public static let timeout = TestError("timed out")
}

