import Foundation

/// Option defaults from the environment.
enum Environment {
    static func string(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func int(_ name: String) -> Int? { string(name).flatMap { Int($0) } }

    /// The variables that must be numbers when set.
    static let numbers = ["HERALD_PORT", "HERALD_HEARTBEAT_SECONDS", "HERALD_HISTORY_EVENTS", "HERALD_HISTORY", "HERALD_HISTORY_BYTES",
                          "HERALD_HISTORY_DAYS", "HERALD_OBSERVER_QUEUE", "HERALD_CONNECTION_MEMORY", "HERALD_STREAMS_PER_ADDRESS",
                          "HERALD_MAX_STREAMS", "HERALD_STREAM_THREADS", "HERALD_CONNECTIONS_PER_SECOND", "HERALD_WRITES_PER_SECOND", "HERALD_HEADER_TIMEOUT", "HERALD_REQUEST_TIMEOUT",
                          "HERALD_MAX_HEADER_BYTES", "HERALD_MAX_URL_BYTES", "HERALD_METRICS_PORT", "HERALD_DRAIN_SECONDS",
                          "HERALD_TOKEN_WARNING_SECONDS", "HERALD_PRESENCE_GRACE_SECONDS", "HERALD_PRESENCE_USERS"]

    static func flag(_ name: String) -> Bool {
        guard let value = string(name)?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }
}
