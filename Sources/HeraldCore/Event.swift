/// One published change: immutable and shared by every observer that receives it.
///
/// `data` is the complete JSON payload (it names its topic); observers never copy or re-encode it.
public final class Event: Sendable {
    /// The global sequence number; `0` for nothing published yet. A transient event carries the
    /// sequence it was published at and does not advance it.
    public let id: UInt64
    /// Where the hub put the event among all it published, transient ones included: an observer takes
    /// each event once, in this order.
    public let order: UInt64
    /// False for an event that is only news of the moment (a countdown's tick): it is not kept for
    /// replay, takes no sequence number, and its frame has no `id:`, so a client's last event id stays
    /// on the last durable event.
    public let durable: Bool
    /// The subject the event belongs to, such as `auctions/7`.
    public let topic: String
    /// The event's name, such as `bid` or `snapshot`.
    public let name: EventName
    /// The JSON payload, UTF-8.
    public var data: [UInt8] { dataInFrame ? Self.data(inFrame: frame) : storedData }
    private let storedData: [UInt8]
    /// The data was not kept beside the frame (a large snapshot, shared by many observers): it is read
    /// back from the frame's `data:` lines when asked for.
    private let dataInFrame: Bool
    /// Labels an observer's filter may look at (changed field names, the posting object).
    public let tags: [String]
    /// The event as observers receive it, encoded once by the hub's encoder and shared by all of them.
    public let frame: [UInt8]
    /// For a change of a collection's member (its tags say so): what the collection's observers get.
    public let membership: Membership?
    /// The events whose frames `frame` holds: 1, or more for a piece of a packed replay (`init(packing:)`).
    public let carried: Int
    /// On a packed replay's first piece, when the pack could be written to a file: the frames of all its
    /// pieces, which a stream may send from the file instead of taking the pieces (`ReplayFile`).
    public let replayFile: ReplayFile?

    /// Encodes an event for the wire (id, name, data), once per event.
    /// The id is nil for a transient event.
    public typealias Encoder = @Sendable (_ id: UInt64?, _ name: EventName, _ data: [UInt8]) -> [UInt8]

    public init(id: UInt64, order: UInt64? = nil, durable: Bool = true, topic: String, name: EventName, data: [UInt8],
                tags: [String] = [], encoder: Encoder? = nil, itemName: EventName? = nil, keepsData: Bool = true) {
        self.id = id
        self.order = order ?? id
        self.durable = durable
        self.topic = topic
        self.name = name
        dataInFrame = !keepsData && encoder != nil
        storedData = dataInFrame ? [] : data
        self.tags = tags
        let frame = encoder?(durable ? id : nil, name, data) ?? []
        self.frame = frame
        let order = order ?? id
        self.membership = durable ? itemName.flatMap {
            // A member's change named as its collection names members (a unit's `unit`): the lobby's
            // item is this event's frame, shared, not encoded and kept a second time.
            Membership(id: id, order: order, topic: topic, data: data, tags: tags, itemName: $0, encoder: encoder,
                       frame: $0 == name ? frame : nil)
        } : nil
        carried = 1
        replayFile = nil
    }

    /// An event whose frame is made already: a lobby's item that is its change's event byte for byte.
    init(id: UInt64, order: UInt64, topic: String, name: EventName, data: [UInt8], frame: [UInt8]) {
        (self.id, self.order, durable, self.topic, self.name) = (id, order, true, topic, name)
        (storedData, dataInFrame, tags, membership) = (data, false, [], nil)
        self.frame = frame
        carried = 1
        replayFile = nil
    }

    /// A piece of a packed replay (`Hub.subscribe(packedReplay:)`): the frames of `events`, durable events
    /// in order, as one frame (`frame`, which `frames(of: events)` made), to be written as they are. It
    /// takes the last one's id, order, topic and name; it has no data of its own.
    init(packing events: ArraySlice<Event>, frame: [UInt8], file: ReplayFile? = nil) {
        let last = events[events.endIndex - 1]
        (id, order, durable, topic, name) = (last.id, last.order, true, last.topic, last.name)
        (storedData, dataInFrame, tags, membership) = ([], false, [], nil)
        self.frame = frame
        carried = events.reduce(0) { $0 + $1.carried }
        replayFile = file
    }

    /// The frames of `events`, one after another.
    static func frames(of events: ArraySlice<Event>) -> [UInt8] {
        var frames: [UInt8] = []
        frames.reserveCapacity(events.reduce(0) { $0 + $1.frame.count })
        for event in events { frames += event.frame }
        return frames
    }

    /// The data an SSE frame carries: its `data:` lines' values, joined by newlines.
    static func data(inFrame frame: [UInt8]) -> [UInt8] {
        var data: [UInt8] = [], lines = 0
        for line in frame.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        where line.starts(with: "data:".utf8) {
            if lines > 0 { data.append(UInt8(ascii: "\n")) }
            var value = line.dropFirst(5)
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
            data.append(contentsOf: value)
            lines += 1
        }
        return data
    }
}
