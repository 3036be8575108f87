import CLinux
import Foundation
import Synchronization

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
        let bytes = requestBytes(method, path, json: json, headers: headers)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw BenchError("send failed")
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            guard count > 0 else { throw BenchError("connection closed") }
            buffer.append(contentsOf: chunk[0..<count])
            guard let answer = Self.answer(in: buffer, from: 0) else { continue }
            return (answer.status, String(decoding: buffer[answer.body], as: UTF8.self))
        }
    }

    /// Sends `count` requests on this connection without waiting for their answers (pipelined, so the
    /// server takes them in order), the k-th (from 1) once `due(k)` (seconds since 1970) has come, and
    /// reads the answers in order on another thread. `request(k)` makes the k-th request's bytes,
    /// `sent(k, time)` is told just before it goes and `answered(k, status)` once its answer is read.
    /// Returns when every answer was read, the connection closed, or `timeout` passed after the last send.
    func schedule(_ count: Int, due: (Int) -> Double, request: (Int) -> [UInt8], sent: (Int, Double) -> Void,
                  answered: @escaping @Sendable (Int, Int) -> Void, timeout: Double) throws {
        if fd < 0 { fd = try connectSocket() }
        var tv = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let socket = fd
        let lastSent = Atomic<Double>(0)
        let reading = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            timingThread()
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            var consumed = 0
            var read = 0
            while read < count {
                let last = lastSent.load(ordering: .acquiring)
                if last > 0, Date().timeIntervalSince1970 > last + timeout { break }
                let got = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, 65536, 0) }
                if got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { break }
                if got > 0 { buffer.append(contentsOf: chunk[0..<got]) }
                while let answer = Self.answer(in: buffer, from: consumed) {
                    read += 1
                    answered(read, answer.status)
                    consumed = answer.end
                }
                if consumed > 1 << 16 {
                    buffer.removeFirst(consumed)
                    consumed = 0
                }
            }
            reading.signal()
        }
        for k in stride(from: 1, through: count, by: 1) {
            let wait = due(k) - Date().timeIntervalSince1970
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            let bytes = request(k)
            let now = Date().timeIntervalSince1970
            sent(k, now)
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { send(socket, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }
                if n > 0 { written += n } else if n < 0, errno == EINTR { continue } else { break }
            }
            lastSent.store(Date().timeIntervalSince1970, ordering: .releasing)
        }
        reading.wait()
    }

    /// The bytes of a request with a JSON body (if any) and more header lines (`Name: value`).
    func requestBytes(_ method: String, _ path: String, json: String? = nil, headers: [String] = []) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for header in headers { text += header + "\r\n" }
        if let json { text += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n" }
        text += "\r\n" + (json ?? "")
        return Array(text.utf8)
    }

    /// The first whole answer in `buffer` from `start`: its status, its body's bytes and where it ends;
    /// nil if it is not all in.
    static func answer(in buffer: [UInt8], from start: Int) -> (status: Int, body: Range<Int>, end: Int)? {
        guard let headEnd = find(buffer, [13, 10, 13, 10], from: start) else { return nil }
        let head = String(decoding: buffer[start..<headEnd], as: UTF8.self)
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let body = (headEnd + 4)..<(headEnd + 4 + length)
        guard buffer.count >= body.upperBound else { return nil }
        return (head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0, body, body.upperBound)
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
        let bid = Self.bid(on: subject, amount: amount, bidder: bidder, nchan: nchan)
        return try request("POST", bid.path, json: bid.body, headers: bid.headers).status
    }

    /// The request that bids (`bid(on:…)`), as bytes: for `schedule`.
    func bidRequest(on subject: String, amount: Int, bidder: String, nchan: Bool) -> [UInt8] {
        let bid = Self.bid(on: subject, amount: amount, bidder: bidder, nchan: nchan)
        return requestBytes("POST", bid.path, json: bid.body, headers: bid.headers)
    }

    private static func bid(on subject: String, amount: Int, bidder: String, nchan: Bool) -> (path: String, body: String, headers: [String]) {
        let body = #"{"bidder":"\#(bidder)","amount":\#(amount)}"#
        return nchan ? ("/pub/\(subject)", body, ["X-EventSource-Event: bid"]) : ("/auctions/\(subject)/bids", body, [])
    }
}
