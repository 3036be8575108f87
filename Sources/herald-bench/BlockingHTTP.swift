import CLinux
import Foundation

/// A minimal blocking HTTP/1.1 client over one keep-alive connection, for the bench's own requests.
final class BlockingHTTP {
    private let host: String
    private let port: Int
    private var fd: Int32 = -1

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends a request with a JSON body (if any) and more header lines (`Name: value`); returns the status and body.
    func request(_ method: String, _ path: String, json: String? = nil, headers: [String] = []) throws -> (status: Int, body: String) {
        if fd < 0 { fd = try connectSocket() }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for header in headers { text += header + "\r\n" }
        if let json { text += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n" }
        text += "\r\n" + (json ?? "")
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw BenchError("send failed")
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            guard count > 0 else { throw BenchError("connection closed") }
            buffer.append(contentsOf: chunk[0..<count])
            guard let end = find(buffer, [13, 10, 13, 10]) else { continue }
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            guard buffer.count >= end + 4 + length else { continue }
            let status = Int(head.split(separator: " ")[1]) ?? 0
            return (status, String(decoding: buffer[(end + 4)..<(end + 4 + length)], as: UTF8.self))
        }
    }

    /// Sends one request per body without waiting, then reads the answers in order; returns their
    /// statuses (fewer than sent if the connection closed or `timeout` seconds passed).
    func pipeline(_ method: String, _ path: String, json bodies: [String], timeout: Double) throws -> [Int] {
        if fd < 0 { fd = try connectSocket() }
        var tv = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(timeout)
        var statuses: [Int] = []
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var requests: [UInt8] = []
        for json in bodies {
            requests += Array("\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)".utf8)
        }
        var written = 0
        var consumed = 0
        while statuses.count < bodies.count, Date() < deadline {
            if written < requests.count {
                let sent = requests.withUnsafeBytes { send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if sent > 0 { written += sent } else if sent < 0, errno != EAGAIN, errno != EWOULDBLOCK { break }
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, written < requests.count ? Int32(MSG_DONTWAIT) : 0) }
            if count == 0 { break }
            if count > 0 { buffer.append(contentsOf: chunk[0..<count]) }
            // Every complete answer in the buffer.
            while let end = find(buffer, [13, 10, 13, 10], from: consumed) {
                let head = String(decoding: buffer[consumed..<end], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                guard buffer.count >= end + 4 + length else { break }
                statuses.append(head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0)
                consumed = end + 4 + length
            }
            if consumed > 1 << 20 {
                buffer.removeFirst(consumed)
                consumed = 0
            }
        }
        return statuses
    }

    private func connectSocket() throws -> Int32 {
        let fd = clinux_connect_ipv4(host, UInt16(port), 0)
        guard fd >= 0 else { throw BenchError("cannot connect to \(host):\(port): errno \(errno)") }
        return fd
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func find(_ haystack: [UInt8], _ needle: [UInt8], from start: Int = 0) -> Int? {
    guard haystack.count >= needle.count + start else { return nil }
    var index = start
    while index <= haystack.count - needle.count {
        if haystack[index] == needle[0] {
            var match = true
            for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                match = false
                break
            }
            if match { return index }
        }
        index += 1
    }
    return nil
}

/// What the benchmarks bid on, the same way for Herald and for nchan (Benchmarks/nchan.conf).
extension BlockingHTTP {
    /// Makes a subject: an auction, whose id it returns, or with `nchan` the channel `channel`, made
    /// by publishing its first message as the `snapshot`.
    func makeSubject(nchan: Bool, channel: String, item: String) throws -> String {
        if nchan {
            let published = try request("POST", "/pub/\(channel)", json: #"{"amount":0}"#, headers: ["X-EventSource-Event: snapshot"])
            guard (200..<300).contains(published.status) else { throw BenchError("nchan refused the first message: \(published.status)") }
            return channel
        }
        let created = try request("POST", "/auctions", json: #"{"item":"\#(item)","countdownSeconds":3600}"#)
        guard created.status == 201, let id = created.body.split(separator: "\"").dropFirst(3).first else {
            throw BenchError("cannot create an auction: \(created.status) \(created.body)")
        }
        return String(id)
    }

    /// Bids `amount` on `subject` (with `nchan`, publishes it as a message named `bid`); the answer's status.
    func bid(on subject: String, amount: Int, bidder: String, nchan: Bool) throws -> Int {
        let body = #"{"bidder":"\#(bidder)","amount":\#(amount)}"#
        return nchan
            ? try request("POST", "/pub/\(subject)", json: body, headers: ["X-EventSource-Event: bid"]).status
            : try request("POST", "/auctions/\(subject)/bids", json: body).status
    }
}
