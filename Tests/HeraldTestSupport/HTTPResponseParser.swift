/// Incremental HTTP/1.1 response parser: the head, then a body by Content-Length, chunked, or until close.
/// Strict about framing (RFC 9112): a chunk size is hex digits and CRLF only, chunk data ends in CRLF,
/// the last chunk is followed by CRLF, and `Content-Length` never comes with `Transfer-Encoding`.
public struct HTTPResponseParser {
    public struct Head: Sendable {
        public let status: Int
        public let headers: [(name: String, value: String)]

        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    public private(set) var head: Head?
    /// Body bytes decoded so far (chunk framing removed), not yet taken.
    public var body: [UInt8] = []
    /// The whole body has arrived.
    public private(set) var complete = false
    private var buffer: [UInt8] = []
    private var remaining: Int?
    private var chunked = false
    private var inChunkData = 0
    private var noBody = false

    public init(noBody: Bool = false) { self.noBody = noBody }

    public mutating func feed(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if head == nil {
            guard let end = Self.find([13, 10, 13, 10], in: buffer) else { return }
            let text = String(decoding: buffer[0..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            var lines = text.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestError("bad status line") }
            let headers = lines.compactMap { line -> (name: String, value: String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
            }
            let head = Head(status: status, headers: headers)
            guard statusLine[0] == "HTTP/1.1" || statusLine[0] == "HTTP/1.0" else { throw TestError("bad version in '\(text)'") }
            if head.header("Transfer-Encoding") != nil, head.header("Content-Length") != nil {
                throw TestError("both Transfer-Encoding and Content-Length")
            }
            if headers.filter({ $0.name.lowercased() == "transfer-encoding" }).count > 1 { throw TestError("two Transfer-Encoding headers") }
            self.head = head
            if noBody || status == 204 || status == 304 {
                complete = true
            } else if head.header("Transfer-Encoding")?.lowercased() == "chunked" {
                chunked = true
            } else if let length = head.header("Content-Length").flatMap(Int.init) {
                remaining = length
            }
        }
        try decodeBody()
    }

    /// The peer closed: a body without length ends here.
    public mutating func finish() {
        if head != nil, !chunked, remaining == nil { complete = true }
    }

    private mutating func decodeBody() throws {
        if complete { return }
        if !chunked {
            if let left = remaining {
                let take = min(left, buffer.count)
                body.append(contentsOf: buffer[0..<take])
                buffer.removeFirst(take)
                remaining = left - take
                if remaining == 0 { complete = true }
            } else {
                body.append(contentsOf: buffer)
                buffer.removeAll()
            }
            return
        }
        while true {
            if inChunkData > 0 {
                let take = min(inChunkData, buffer.count)
                if take == 0 { return }
                body.append(contentsOf: buffer[0..<take])
                buffer.removeFirst(take)
                inChunkData -= take
                if inChunkData > 0 { return }
                inChunkData = -1  // expect CRLF after the data
            }
            if inChunkData == -1 || inChunkData == -2 {
                guard buffer.count >= 2 else { return }
                guard buffer[0] == 13, buffer[1] == 10 else { throw TestError("chunk data or last chunk not followed by CRLF") }
                buffer.removeFirst(2)
                if inChunkData == -2 {
                    complete = true
                    return
                }
                inChunkData = 0
            }
            guard let lineEnd = Self.find([13, 10], in: buffer) else { return }
            let sizeText = String(decoding: buffer[0..<lineEnd], as: UTF8.self)
            guard !sizeText.isEmpty, sizeText.allSatisfy(\.isHexDigit), let size = Int(sizeText, radix: 16) else {
                throw TestError("bad chunk size line '\(sizeText)'")
            }
            buffer.removeFirst(lineEnd + 2)
            if size == 0 {
                inChunkData = -2  // the last chunk: CRLF (no trailers) ends the body
                continue
            }
            inChunkData = size
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

import Foundation
