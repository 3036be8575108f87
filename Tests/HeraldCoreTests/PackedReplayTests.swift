import Glibc
@testable import HeraldCore
import Testing

/// A packed replay (`Hub.subscribe(packedReplay:)`): the missed events of one topic or several in pieces
/// that hold their frames, the same bytes as the events one by one, made once for every observer of the
/// same topics that resumes from the same id until the next event is kept; its first piece carries
/// the frames of all of them in a file, which an SSE stream sends from.
@Suite struct PackedReplayTests {
    /// Frames like SSE's, one per event: its id and data.
    static let encoder: Event.Encoder = { id, name, data in
        Array("id: \(id.map(String.init) ?? "")\nevent: \(name.text)\ndata: ".utf8) + data + Array("\n\n".utf8)
    }

    func queued(_ subscription: Subscription) -> [Event] {
        guard case .events(let events) = subscription.poll() else { return [] }
        return events.filter { $0.name != .position }
    }

    /// 300 bids of about 100 bytes on `auctions/1`, between which `auctions/2` has events too.
    func hubWithHistory() -> Hub {
        let hub = Hub(encoder: Self.encoder)
        for index in 1...300 {
            let padding = String(repeating: "x", count: 80)
            hub.publish(topic: "auctions/1", name: "bid", data: Array("{\"amount\":\(index),\"p\":\"\(padding)\"}".utf8))
            if index.isMultiple(of: 3) { hub.publish(topic: "auctions/2", name: "bid", data: Array("{\"other\":\(index)}".utf8)) }
        }
        hub.deliver()
        return hub
    }

    @Test func aPackedReplayIsTheSameBytesInFewerPiecesAndIsMadeOnceForEveryoneFromTheSameId() {
        let hub = hubWithHistory()
        let plain = queued(hub.subscribe(to: ["auctions/1"], resume: .after(5)))
        let first = queued(hub.subscribe(to: ["auctions/1"], resume: .after(5), packedReplay: true))
        let second = queued(hub.subscribe(to: ["auctions/1"], resume: .after(5), packedReplay: true))
        #expect(plain.count == 296 && plain.allSatisfy { $0.carried == 1 }, "bids 5 to 300 (ids 1 to 5 hold bids 1 to 4)")
        #expect(first.flatMap(\.frame) == plain.flatMap(\.frame), "the pieces hold the replay's frames, in order")
        #expect(first.reduce(0) { $0 + $1.carried } == plain.count, "each piece counts the events it holds")
        #expect(first.count > 1 && first.count < 5, "\(first.count) pieces of about \(Hub.packPiece) bytes")
        #expect(first.allSatisfy { $0.frame.count < Hub.packPiece + 200 })
        #expect(first.last?.id == plain.last?.id && first.last?.order == plain.last?.order, "the last piece ends where the replay does")
        #expect(second.count == first.count && zip(first, second).allSatisfy { $0 === $1 }, "the second resume shares the pieces")
        #expect(hub.sharedReplays == 1)

        // Another id makes its own; an event kept makes the next resume from 5 pack again, with it.
        let later = queued(hub.subscribe(to: ["auctions/1"], resume: .after(200), packedReplay: true))
        #expect(later.flatMap(\.frame) == queued(hub.subscribe(to: ["auctions/1"], resume: .after(200))).flatMap(\.frame))
        hub.publish(topic: "auctions/1", name: "bid", data: Array("{\"amount\":301}".utf8))
        let third = queued(hub.subscribe(to: ["auctions/1"], resume: .after(5), packedReplay: true))
        #expect(third.reduce(0) { $0 + $1.carried } == plain.count + 1)
        #expect(third.flatMap(\.frame) == queued(hub.subscribe(to: ["auctions/1"], resume: .after(5))).flatMap(\.frame))
        #expect(hub.sharedReplays == 1, "nothing made before the new event was shared after it")
    }

    @Test func aPacksFirstPieceCarriesAFileOfEveryPiecesFramesThenCRLF() throws {
        let hub = hubWithHistory()
        let pieces = queued(hub.subscribe(to: ["auctions/1", "auctions/2"], resume: .after(5), packedReplay: true))
        let file = try #require(pieces.first?.replayFile, "the first piece has the file")
        #expect(pieces.dropFirst().allSatisfy { $0.replayFile == nil }, "only the first")
        let frames = pieces.flatMap(\.frame)
        #expect(file.count == frames.count && file.pieces == pieces.count && pieces.reduce(0) { $0 + $1.carried } == 395)
        var read = [UInt8](repeating: 0, count: frames.count + 16)
        let got = read.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, 0) }
        #expect(got == frames.count + 2)
        #expect(Array(read[0..<max(got, 0)]) == frames + [0x0D, 0x0A], "the frames, in order, then the end of a chunk")
        let shared = queued(hub.subscribe(to: ["auctions/1", "auctions/2"], resume: .after(5), packedReplay: true))
        #expect(shared.first?.replayFile === file, "shared with the pieces")
    }

    @Test func severalTopicsPackAsTheyReplayAndAFilterOrACollectionDoesNot() {
        let hub = hubWithHistory()
        let two = queued(hub.subscribe(to: ["auctions/1", "auctions/2"], resume: .after(5), packedReplay: true))
        let plainTwo = queued(hub.subscribe(to: ["auctions/1", "auctions/2"], resume: .after(5)))
        #expect(plainTwo.count == 395 && two.count < 5)
        #expect(two.flatMap(\.frame) == plainTwo.flatMap(\.frame), "both topics' events, in the order published")
        let otherOrder = queued(hub.subscribe(to: ["auctions/2", "auctions/1"], resume: .after(5), packedReplay: true))
        #expect(otherOrder.count == two.count && zip(two, otherOrder).allSatisfy { $0 === $1 }, "the same topics share, in any order")

        let filtered = queued(hub.subscribe(to: ["auctions/1"], resume: .after(5), filter: { _ in true }, packedReplay: true))
        #expect(filtered.count == 296 && filtered.allSatisfy { $0.carried == 1 })
        hub.publish(topic: "auctions/1", name: "bid", data: Array("{\"amount\":301}".utf8))
        let one = queued(hub.subscribe(to: ["auctions/1"], resume: .after(hub.lastEventId - 1), packedReplay: true))
        #expect(one.count == 1 && one.allSatisfy { $0.carried == 1 }, "a replay of one event stays as it is")

        let lobby = Hub(encoder: Self.encoder)
        lobby.declareCollection("auctions", arrayName: "auctions", itemName: "auction")
        for index in 1...3 {
            lobby.publish(topic: "auctions/\(index)", name: "bid", tags: Membership.tags(before: nil, after: [FilterValue(field: "status", value: "open")]),
                          updates: [.member(of: "auctions", key: String(index), value: Array("{\"id\":\"\(index)\"}".utf8), values: [FilterValue(field: "status", value: "open")])],
                          data: Array("{\"topic\":\"auctions/\(index)\"}".utf8))
        }
        let members = queued(lobby.subscribe(to: ["auctions"], resume: .after(0), packedReplay: true))
        #expect(members.count == 3 && members.allSatisfy { $0.carried == 1 }, "a collection's observer gets each member's view")
        #expect(hub.sharedReplays == 1 && lobby.sharedReplays == 0)
    }
}
