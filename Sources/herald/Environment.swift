import Foundation

/// Option defaults from the environment. Every variable is declared here once, with its kind: the
/// help text lists them from here, the numbers are checked from here, and reading one that is not
/// declared stops the program at once (every start reads them all), so none can be left out of either.
enum Environment {
    /// The variables that hold text.
    static let texts = ["HERALD_HOST", "HERALD_DATA_DIR", "HERALD_STORE", "HERALD_SYNC", "HERALD_CORS_ORIGIN", "HERALD_ALLOWED_HOSTS",
                        "HERALD_LOG_LEVEL", "HERALD_JWT_KEY", "HERALD_JWT_KEY_FILE", "HERALD_JWT_PUBLIC_KEY_FILE", "HERALD_TRUSTED_PROXY",
                        "HERALD_LOG_FORMAT", "HERALD_METRICS_HOST"]
    /// The variables that must be whole numbers when set.
    static let numbers = ["HERALD_PORT", "HERALD_HEARTBEAT_SECONDS", "HERALD_HISTORY_EVENTS", "HERALD_HISTORY", "HERALD_HISTORY_BYTES",
                          "HERALD_HISTORY_DAYS", "HERALD_OBSERVER_QUEUE", "HERALD_OBSERVER_QUEUE_BYTES", "HERALD_CONNECTION_MEMORY", "HERALD_STREAMS_PER_ADDRESS",
                          "HERALD_MAX_STREAMS", "HERALD_STREAM_THREADS", "HERALD_CONNECTIONS_PER_SECOND", "HERALD_CONNECTIONS_PER_ADDRESS",
                          "HERALD_WRITES_PER_SECOND", "HERALD_HEADER_TIMEOUT", "HERALD_REQUEST_TIMEOUT", "HERALD_MAX_HEADER_BYTES",
                          "HERALD_MAX_URL_BYTES", "HERALD_METRICS_PORT", "HERALD_DRAIN_SECONDS", "HERALD_TOKEN_WARNING_SECONDS",
                          "HERALD_PRESENCE_GRACE_SECONDS", "HERALD_PRESENCE_USERS"]
    /// The variables that switch something on (`1`, `true`, `yes` or `on`).
    static let flags = ["HERALD_IN_MEMORY", "HERALD_NO_EXAMPLES", "HERALD_PUBLIC_STREAMS", "HERALD_NO_ACCESS_LOG", "HERALD_NO_METRICS"]

    /// Every variable, for `--help`: the switches with `=1`.
    static var described: String {
        (texts + numbers + flags.map { $0 + "=1" }).sorted().joined(separator: ", ")
    }

    static func string(_ name: String) -> String? {
        precondition(texts.contains(name) || numbers.contains(name) || flags.contains(name), "\(name) is not declared in Environment")
        return ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func int(_ name: String) -> Int? {
        precondition(numbers.contains(name), "\(name) is not declared in Environment.numbers")
        return string(name).flatMap { Int($0) }
    }

    static func flag(_ name: String) -> Bool {
        precondition(flags.contains(name), "\(name) is not declared in Environment.flags")
        guard let value = string(name)?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }
}
