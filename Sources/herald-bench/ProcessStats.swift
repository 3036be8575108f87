import Foundation

/// What `/proc` says of a process: resident memory, CPU time, threads.
struct ProcessStats {
    let pid: Int32

    /// Resident set size in KiB.
    var rssKiB: Int { status("VmRSS") ?? 0 }
    var threads: Int { status("Threads") ?? 0 }

    /// User plus system CPU seconds so far.
    var cpuSeconds: Double { cpu.user + cpu.system }

    /// User and system (kernel) CPU seconds so far.
    var cpu: (user: Double, system: Double) { Self.cpu(of: "/proc/\(pid)/stat") }

    /// User plus system CPU seconds so far of each thread whose name starts with `prefix`, by name
    /// (Herald's stream-engine loops are `herald-streams`, `herald-streams1`, …).
    func threadCPUSeconds(named prefix: String) -> [String: Double] {
        let tasks = "/proc/\(pid)/task"
        var seconds: [String: Double] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let name = try? String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), name.hasPrefix(prefix) else { continue }
            let cpu = Self.cpu(of: "\(tasks)/\(task)/stat")
            seconds[name, default: 0] += cpu.user + cpu.system
        }
        return seconds
    }

    /// User and system CPU seconds from a `stat` file of `/proc` (a process's or a thread's).
    private static func cpu(of path: String) -> (user: Double, system: Double) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return (0, 0) }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return (0, 0) }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user / ticks, system / ticks)
    }

    private func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }
}

/// Percentiles of a sample, in the sample's unit.
struct Distribution: Encodable {
    let count: Int
    let p50: Double
    let p90: Double
    let p99: Double
    let max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        func at(_ q: Double) -> Double {
            sorted.isEmpty ? 0 : (sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.down)))] * 1000).rounded() / 1000
        }
        count = sorted.count
        p50 = at(0.5)
        p90 = at(0.9)
        p99 = at(0.99)
        max = ((sorted.last ?? 0) * 1000).rounded() / 1000
    }
}
