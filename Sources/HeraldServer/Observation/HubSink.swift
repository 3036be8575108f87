import HeraldCore
import HeraldDomain
import HeraldJSON

/// Publishes the domain's changes on the hub: the payload, with its topic first, becomes the event's data.
struct HubSink: ChangeSink {
    let hub: Hub

    func publish(_ change: Change) { post(change) }

    /// Publishes `change` and returns its event.
    @discardableResult
    func post(_ change: Change) -> Event {
        hub.publish(topic: change.topic, name: change.event, tags: change.tags,
                    updates: Self.updates(change.values), data: Self.data(topic: change.topic, payload: change.payload))
    }

    func seed(_ values: [(topic: String, value: JSONValue?)]) {
        hub.set(Self.updates(values))
    }

    private static func updates(_ values: [(topic: String, value: JSONValue?)]) -> [Hub.Update] {
        values.map { entry in Hub.Update(topic: entry.topic, value: entry.value.map { data(topic: entry.topic, payload: $0) }) }
    }

    /// `{"topic": …, …payload}`.
    static func data(topic: String, payload: JSONValue) -> [UInt8] {
        let members: [(String, JSONValue)]
        if case .object(let payloadMembers) = payload { members = payloadMembers } else { members = [("value", payload)] }
        return JSONValue.object([("topic", .string(topic))] + members).bytes
    }
}
