import Foundation

/// The thread that listens for commits (`PostgresStore.listen`).
public final class PostgresListener: Sendable {
    private let stopped = SharedFlag(false)
    private let started = SharedFlag(false)
    private let ended = DispatchSemaphore(value: 0)
    private let url: String, channel: String
    private let listening: SharedFlag
    private let heard: @Sendable () -> Void

    init(url: String, channel: String, listening: SharedFlag, heard: @escaping @Sendable () -> Void) {
        (self.url, self.channel, self.listening, self.heard) = (url, channel, listening, heard)
    }

    /// Starts the thread, which connects, listens, and calls `heard` after each notification and after
    /// each (re)connection.
    public func start() {
        guard !stopped.isSet, !started.raise() else { return }
        let (url, channel, listening, heard) = (url, channel, listening, heard)
        let thread = Thread { [stopped, ended] in
            var connection: PostgresConnection?
            while !stopped.isSet {
                guard let open = connection else {
                    do {
                        let made = try PostgresConnection(url)
                        try made.execute("LISTEN \(channel)")
                        connection = made
                        listening.set(true)
                        heard()
                    } catch {
                        listening.set(false)
                        Thread.sleep(forTimeInterval: 0.5)
                    }
                    continue
                }
                do {
                    if try !open.notifications(waiting: 250).isEmpty { heard() }
                } catch {
                    connection = nil
                    listening.set(false)
                }
            }
            ended.signal()
        }
        thread.name = "herald-listen"
        thread.start()
    }

    deinit { stop() }

    /// Stops listening and waits for the thread to end (if it started).
    public func stop() {
        guard !stopped.raise(), started.isSet else { return }
        ended.wait()
    }
}
