import Foundation

/// A response as the tests see it.
public struct TestResponse: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body parsed as a JSON object (Foundation), or an empty one.
    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// A plain HTTP/1.1 client over one keep-alive socket to 127.0.0.1.
public final class HTTPClient {
    public let port: Int
    private var socket: Socket?

    /// The local address connections come from (see `Socket`); nil: any.
    public let source: String?

    public init(port: Int, source: String? = nil) {
        self.port = port
        self.source = source
    }

    /// Sends one request and reads the whole response. JSON bodies get `Content-Type: application/json`
    /// unless `headers` name another.
    public func request(_ method: String, _ path: String, json: String? = nil, body: [UInt8]? = nil,
                        headers: [(String, String)] = []) throws -> TestResponse {
        let payload = body ?? json.map { Array($0.utf8) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if json != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            head += "Content-Type: application/json\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let payload { head += "Content-Length: \(payload.count)\r\n" }
        head += "\r\n"
        // A server may close a keep-alive connection between requests; retry once on a fresh one.
        for attempt in 0..<2 {
            let socket = try self.socket ?? Socket(port: port, source: source)
            self.socket = socket
            do {
                try socket.send(Array(head.utf8) + (payload ?? []))
                var parser = HTTPResponseParser(noBody: method == "HEAD")
                while !parser.complete {
                    let bytes = try socket.receive()
                    if bytes.isEmpty {
                        parser.finish()
                        guard parser.complete else { throw TestError("connection closed mid-response") }
                        break
                    }
                    try parser.feed(bytes)
                }
                guard let responseHead = parser.head else { throw TestError("no response") }
                if responseHead.header("Connection")?.lowercased() == "close" { self.socket = nil }
                return TestResponse(status: responseHead.status, headers: responseHead.headers, body: parser.body)
            } catch let error as TestError where attempt == 0 && error != .timeout {
                self.socket = nil
            }
        }
        throw TestError("request failed twice")
    }

    public func get(_ path: String, headers: [(String, String)] = []) throws -> TestResponse {
        try request("GET", path, headers: headers)
    }

    /// Every entry of a paged list: `GET path`, then each page's `next` until it is null. Fails on a
    /// page that is not 200, and after `maximumPages` pages (a `next` that never ends).
    public func all(_ path: String, _ name: String, maximumPages: Int = 1_000) throws -> [[String: Any]] {
        var entries: [[String: Any]] = []
        var next: String? = path
        for _ in 0..<maximumPages {
            guard let address = next else { return entries }
            let page = try get(address)
            guard page.status == 200, let list = page.json[name] as? [[String: Any]] else {
                throw TestError("GET \(address) answered \(page.status): \(page.text.prefix(200))")
            }
            entries += list
            next = page.json["next"] as? String
        }
        throw TestError("more than \(maximumPages) pages from \(path)")
    }

    public func post(_ path: String, _ json: String) throws -> TestResponse { try request("POST", path, json: json) }
    public func put(_ path: String, _ json: String) throws -> TestResponse { try request("PUT", path, json: json) }
    public func patch(_ path: String, _ json: String) throws -> TestResponse { try request("PATCH", path, json: json) }

    public func close() { socket = nil }
}
