import CLinux
import Foundation

/// A blocking TCP connection to 127.0.0.1 with a receive timeout: the bottom of the test clients.
public final class Socket {
    public let fd: Int32
    private var closed = false

    /// - Parameter receiveBuffer: a small kernel receive buffer (set before connecting, as TCP needs),
    ///   so a client that stops reading fills it quickly.
    ///   `source`: the local address to connect from (127.0.0.2 is another client to the server); nil: any.
    public init(port: Int, host: String = "127.0.0.1", timeout: Double = 30, receiveBuffer: Int32? = nil, source: String? = nil) throws {
        fd = source.map { clinux_connect_ipv4_from(host, UInt16(port), receiveBuffer ?? 0, $0) } ?? clinux_connect_ipv4(host, UInt16(port), receiveBuffer ?? 0)
        guard fd >= 0 else { throw TestError("connect to \(host):\(port) failed: errno \(errno)") }
        setTimeout(timeout)
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

    /// Closes with a reset (RST), as a client that vanishes does: `SO_LINGER` of zero, then close.
    public func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}
