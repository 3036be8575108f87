import Foundation

/// The thread that listens for commits (`PostgresStore.listen`).
public final class PostgresListener: Sendable {
    private let stopped = SharedFlag(false)
    private let ended = DispatchSemaphore(value: 0)

    init(url: String, channel: String, listening: SharedFlag, heard: @escaping @Sendable () -> Void) {
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

    /// Stops listening and waits for the thread to end.
    public func stop() {
        guard !stopped.raise() else { return }
        ended.wait()
    }
}
