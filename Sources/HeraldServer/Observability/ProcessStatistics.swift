import HeraldThreads
import Foundation
import Prometheus
import Synchronization

/// The process's own figures, under the names Prometheus's client libraries use (`process_…`): open
/// files, the open-file limit, resident memory, CPU time and the start time. Read from `/proc/self` at
/// each scrape.
final class ProcessStatistics: Sendable {
    private let startTime = Date().timeIntervalSince1970
    /// CPU seconds already added to the counter.
    private let cpuCounted = Lock<Double>(0)

    func update(_ registry: PrometheusCollectorRegistry) {
        registry.makeGauge(descriptor: Metrics.describe("process_open_fds", "Open file descriptors.")).set(Double(Self.openFiles()))
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            registry.makeGauge(descriptor: Metrics.describe("process_max_fds", "The open-file limit.")).set(Double(limit.rlim_cur))
        }
        registry.makeGauge(descriptor: Metrics.describe("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds."))
            .set(startTime)
        guard let stat = Self.stat() else { return }
        registry.makeGauge(descriptor: Metrics.describe("process_resident_memory_bytes", "Resident memory in bytes.")).set(Double(stat.residentBytes))
        let counter = registry.makeCounter(descriptor: Metrics.describe("process_cpu_seconds_total", "User and system CPU time spent, in seconds."))
        cpuCounted.withLock { counted in
            if stat.cpuSeconds > counted {
                counter.increment(by: stat.cpuSeconds - counted)
                counted = stat.cpuSeconds
            }
        }
    }

    /// Entries of `/proc/self/fd`, less the one the count itself opens.
    static func openFiles() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        // By type, not by name: `entry.pointee.d_name` copies all 256 bytes of the name's array, past the
        // end of a short record in readdir's buffer (AddressSanitizer caught it in a scrape). The
        // descriptors are links; only `.` and `..` are directories.
        while let entry = readdir(directory) {
            if entry.pointee.d_type != UInt8(DT_DIR) { count += 1 }
        }
        return max(count - 1, 0)
    }

    /// CPU seconds (user and system) and resident bytes from `/proc/self/stat`.
    static func stat() -> (cpuSeconds: Double, residentBytes: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After the command's name (which may hold spaces): field 3 onward.
        let fields = text[text.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15, rss (pages) field 24: indices 11, 12 and 21 here.
        guard fields.count > 21, let user = Double(fields[11]), let system = Double(fields[12]), let pages = Int(fields[21]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ((user + system) / max(ticks, 1), pages * Int(sysconf(Int32(_SC_PAGESIZE))))
    }
}
