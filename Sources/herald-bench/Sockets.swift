import CLinux
import Foundation

/// A non-blocking TCP connect from the loopback address `source` (so that many clients do not run out
/// of ports) to `host:port`; the socket, or nil.
func connectNonBlocking(from source: String, to host: String, port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { return nil }
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    inet_pton(AF_INET, source, &local.sin_addr)
    _ = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var remote = sockaddr_in()
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, host, &remote.sin_addr)
    let result = withUnsafePointer(to: &remote) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 || errno == EINPROGRESS else {
        close(fd)
        return nil
    }
    return fd
}

/// Reads what a non-blocking socket holds, a `buffer` at a time, calling `piece` with each read's
/// bytes. Returns false when the peer closed or the socket failed.
func readAvailable(_ fd: Int32, into buffer: inout [UInt8], _ piece: (UnsafeRawBufferPointer) -> Void) -> Bool {
    while true {
        let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if received <= 0 { return received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) }
        buffer.withUnsafeBytes { piece(UnsafeRawBufferPointer(rebasing: $0[0..<received])) }
        if received < buffer.count { return true }
    }
}
