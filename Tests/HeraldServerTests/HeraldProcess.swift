import Foundation
import HeraldDomain
import HeraldServer
import HeraldStore
import HeraldTestSupport
import HeraldThreads

/// The built `herald` executable, next to the test bundle (in the test command, built with
/// AddressSanitizer); `HERALD_BINARY` names another build.
func heraldExecutable() -> URL {
    if let binary = ProcessInfo.processInfo.environment["HERALD_BINARY"], !binary.isEmpty {
        return URL(fileURLWithPath: binary)
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")
}

/// `herald` as a child process. It binds port 0 itself and the port is read from its log: choosing a
/// free port here and passing it on would race with every other server the parallel tests start
/// (a check of /health could then reach one of theirs).
final class HeraldProcess {
    /// For load tests from one address: no limit on streams per address, new connections or writes.
    static let unlimited = ["--streams-per-address", "0", "--connections-per-second", "0", "--connections-per-address", "0",
                            "--writes-per-second", "0"]

    let process = Process()
    let port: Int
    private let errors = Pipe()
    /// What it wrote to standard error so far.
    let log = LogLines()
    /// With `closingItsLog`: the reader let the pipe go.
    let logLetGo = Lock(false)

    /// Starts `herald` in memory, or on `dataDirectory` when given, or on the database `arguments`
    /// name with `--store`; with `openFileLimit`, under that limit (`ulimit -n`, then `exec`). With
    /// `closingItsLog`, nobody reads its standard error once it gave its port: the pipe has no reader.
    init(arguments: [String] = [], dataDirectory: String? = nil, openFileLimit: Int? = nil, closingItsLog: Bool = false,
         asanOptions: String? = nil) throws {
        let store = arguments.contains("--store") ? [] : dataDirectory.map { ["--data-dir", $0] } ?? ["--in-memory"]
        // No pause between SIGTERM and the streams' end unless a test asks for one.
        let drain = arguments.contains("--drain-seconds") ? [] : ["--drain-seconds", "0"]
        let heraldArguments = ["--port", "0", "--log-level", "info"] + store + drain + arguments
        if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", heraldExecutable().path] + heraldArguments
        } else {
            process.executableURL = heraldExecutable()
            process.arguments = heraldArguments
        }
        // The test command checks the children for leaks, not the test process (see scripts/test).
        // `asanOptions` add to them (a build without AddressSanitizer ignores them).
        if let options = ProcessInfo.processInfo.environment["HERALD_CHILD_ASAN_OPTIONS"] {
            let all = [options, asanOptions].compactMap { $0 }.joined(separator: ":")
            process.environment = ProcessInfo.processInfo.environment.merging(["ASAN_OPTIONS": all]) { $1 }
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        let (log, logLetGo) = (self.log, self.logLetGo)
        try process.run()
        // Read with blocking reads on a thread of its own until the child closes its end, not with
        // `readabilityHandler`: tearing down that handler's dispatch read source races libdispatch's epoll
        // bookkeeping on Linux, and it crashed the test process in `_dispatch_event_loop_drain` in CI
        // (swift-corelibs-libdispatch#949). Started after `run()`, which closes the parent's write end.
        let reader = errors.fileHandleForReading
        Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reader.fileDescriptor, $0.baseAddress, $0.count) }
                if count > 0 { log.append(Data(buffer[..<count])) } else if count == 0 || errno != EINTR { break }
                if closingItsLog, log.listeningPort != nil { break }
            }
            if closingItsLog {
                try? reader.close()
                logLetGo.withLock { $0 = true }
            }
        }.start()
        let child = process
        guard eventually(timeout: 10, { log.listeningPort != nil || !child.isRunning }), let port = log.listeningPort else {
            process.terminate()
            // The head of the log: a crash says why first, then prints a long backtrace.
            throw TestError("herald did not start: \(log.text.prefix(3000))")
        }
        self.port = port
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// A field of /proc/PID/status, such as `Threads` or `VmRSS` (kB).
    func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }
}
