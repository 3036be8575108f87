import HeraldDomain
import HeraldJSON
import Synchronization

/// Keeps every change the domain reports, in order.
final class RecordingSink: ChangeSink {
    private let changes = Mutex<[Change]>([])
    private let seeded = Mutex<[String: JSONValue?]>([:])

    func publish(_ change: Change) { changes.withLock { $0.append(change) } }

    func declareCollection(_ topic: String, arrayName: String) {}

    func perform(_ work: @escaping @Sendable () -> Void) { work() }

    func seed(_ values: [(topic: String, value: JSONValue?)], members: [Member]) {
        seeded.withLock { for (topic, value) in values { $0[topic] = value } }
    }

    var all: [Change] { changes.withLock { $0 } }
    /// The changes observers are told of (those with an event).
    var events: [Change] { all.filter { $0.event != nil } }
    var names: [String?] { all.map(\.event) }
    func named(_ name: String) -> [Change] { all.filter { $0.event == name } }
    func seededValue(_ topic: String) -> JSONValue?? { seeded.withLock { $0[topic] } }
}
