import Foundation
import HeraldThreads

/// The thread that listens for commits (`PostgresStore.listen`), and carries the replicas' messages
/// to each other (a stream's renewal sent to a replica that does not hold the stream).
public final class PostgresListener: Sendable {
    private let stopped = SharedFlag(false)
    private let started = SharedFlag(false)
    private let ended = DispatchSemaphore(value: 0)
    private let url: String, channel: String
    /// What every payload on the two channels must carry to be acted on.
    let seal: ChannelSeal
    private let listening: SharedFlag
    private let heard: @Sendable (_ payloads: [String]?) -> Void
    /// Read after each (re)connection, once listening, before `heard(nil)`: its first value is what
    /// was committed then (what came before may have been missed; what follows is heard).
    private let since: Since?
    struct Since: Sendable {
        let sql: String
        let run: @Sendable (String) -> Void
    }
    /// A read the listener makes on its own connection after each (re)connection and then every
    /// `every` (`PostgresStore.revocationsRead`): what a message sent while a replica's connection was
    /// down told the others, they learn from the table within `every`.
    public struct Refresh: Sendable {
        let every: Duration
        let read: @Sendable (PostgresConnection) throws(StoreError) -> Void
    }
    /// Messages to send, on the listener's connection, at its next turn (within `turn` milliseconds).
    private let outbox = Lock<[String]>([])

    /// The listener's session in `pg_stat_activity` (`application_name`); the writer's is `herald`.
    public static let applicationName = "herald-listen"
    /// The channel of the replicas' messages to each other.
    public static let messageChannel = "herald_messages"
    /// The longest wait for a notification before the thread looks at its outbox, in milliseconds.
    static let turn: Int32 = 100
    /// The longest message PostgreSQL carries with its seal (a NOTIFY payload is under 8,000 bytes).
    public static let messageLimit = 7_900 - ChannelSeal.messageOverhead

    init(url: String, channel: String, seal: ChannelSeal, listening: SharedFlag, since: Since? = nil,
         heard: @escaping @Sendable (_ payloads: [String]?) -> Void) {
        (self.url, self.channel, self.seal, self.listening, self.since, self.heard) = (url, channel, seal, listening, since, heard)
    }

    /// Sends `message` to every replica's listener (this one's too), within about `turn` milliseconds;
    /// false when it is too long to send. While the connection is down, it is lost.
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard message.utf8.count <= Self.messageLimit else { return false }
        outbox.withLock { $0.append(message) }
        return true
    }

    /// Starts the thread, which connects, listens, and calls `heard` with the payloads of the commits'
    /// notifications it got in one wait, and with nil after each (re)connection (some may have been
    /// missed), and `handler` with each message another replica (or this one) sent; without a handler
    /// it does not listen for messages.
    /// `refresh`, if given, is read after each (re)connection and then every `refresh.every`.
    public func start(onMessage handler: (@Sendable (String) -> Void)? = nil, refresh: Refresh? = nil) {
        guard !stopped.isSet, !started.raise() else { return }
        let (url, channel, listening, heard, outbox, since, seal) = (url, channel, listening, heard, outbox, since, seal)
        let thread = Thread { [stopped, ended] in
            var connection: PostgresConnection?
            var refreshed = ContinuousClock.now
            while !stopped.isSet {
                guard let open = connection else {
                    do {
                        let made = try PostgresConnection(url, name: Self.applicationName)
                        try made.execute("LISTEN \(channel)")
                        if handler != nil { try made.execute("LISTEN \(Self.messageChannel)") }
                        connection = made
                        listening.set(true)
                        if let since, let value = try made.text(since.sql) { since.run(value) }
                        heard(nil)
                        try refresh?.read(made)
                        refreshed = .now
                    } catch {
                        listening.set(false)
                        outbox.withLock { $0 = [] }
                        Thread.sleep(forTimeInterval: 0.5)
                    }
                    continue
                }
                do {
                    let notifications = try open.notifications(waiting: Self.turn)
                    // Only what a replica sealed; the rest is dropped and counted (`ChannelSeal.drops`).
                    let commits = notifications.filter { $0.channel == channel }.compactMap { seal.openNews($0.payload, channel: channel) }
                    if !commits.isEmpty { heard(commits) }
                    for notification in notifications where notification.channel == Self.messageChannel {
                        if let message = seal.openMessage(notification.payload, channel: Self.messageChannel) { handler?(message) }
                    }
                    for message in outbox.withLock({ outbox in defer { outbox = [] }; return outbox }) {
                        _ = try open.query("SELECT pg_notify($1, $2)",
                                           [.text(Self.messageChannel), .text(seal.sealMessage(message, channel: Self.messageChannel))])
                    }
                    if let refresh, refreshed.duration(to: .now) >= refresh.every {
                        try refresh.read(open)
                        refreshed = .now
                    }
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

    /// Stops listening and waits for the thread to end (if it started). The message handler goes with
    /// the thread: it holds what handles the messages (the presence exchange, the renewals), which hold
    /// this listener to answer through it.
    public func stop() {
        guard !stopped.raise(), started.isSet else { return }
        ended.wait()
    }
}
