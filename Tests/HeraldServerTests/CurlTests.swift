import Foundation
import HeraldTestSupport
import Testing

/// The same API through curl, the client most people try first.
@Suite struct CurlTests {
    /// Runs curl with `arguments`; returns its standard output.
    func curl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func curlReadsAStreamAndPostsBodies() throws {
        let server = try TestHerald()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let stream = try curl(["-N", "--max-time", "1", "\(base)/currency/events"])
        #expect(stream.hasPrefix(": "))
        #expect(stream.contains("retry: 3000\n"))
        #expect(stream.contains("event: snapshot\ndata: {\"topic\":\"currency\""))

        // Bodies over 1 KiB make curl send `Expect: 100-continue`.
        let padding = String(repeating: "p", count: 20_000)
        let created = try curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
                                "--data-binary", #"{"item":"big but fine","pad":"\#(padding)"}"#, "\(base)/auctions"])
        #expect(created == "201")
        let tooLarge = String(repeating: "x", count: 70_000)
        let refused = try curl(["-H", "Content-Type: application/json", "--data-binary", #"{"item":"\#(tooLarge)"}"#, "\(base)/auctions"])
        #expect(refused.contains("\"status\":413"))
        let head = try curl(["-I", "--max-time", "2", "\(base)/currency/events"])
        #expect(head.lowercased().contains("content-type: text/event-stream"))
        #expect(try eventually { try server.observers(of: "currency") == 0 }, "the HEAD left no observer behind")
    }
}
