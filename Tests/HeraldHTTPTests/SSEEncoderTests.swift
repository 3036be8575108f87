import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing
import Synchronization

@Suite struct SSEEncoderTests {
    @Test func encodesIdEventAndOneDataLine() {
        let bytes = SSEEncoder.encode(SSEMessage(id: "42", event: "bid", data: Array(#"{"topic":"auctions/1"}"#.utf8)))
        #expect(String(decoding: bytes, as: UTF8.self) == "id: 42\nevent: bid\ndata: {\"topic\":\"auctions/1\"}\n\n")
    }

    @Test func splitsLineBreaksIntoDataLinesSoAParserGetsTheSameText() {
        var parser = SSEParser()
        let data = "one\ntwo\r\nthree\rfour"
        let events = parser.feed(SSEEncoder.encode(SSEMessage(id: nil, event: nil, data: Array(data.utf8))))
        #expect(events.map(\.data) == ["one\ntwo\nthree\nfour"])
    }

    @Test func preambleAndHeartbeatAreCommentsAndRetry() {
        var parser = SSEParser()
        let events = parser.feed(SSEEncoder.preamble(retryMilliseconds: 3000) + SSEEncoder.heartbeat)
        #expect(events.isEmpty)
        #expect(parser.retry == 3000)
        #expect(parser.comments.count == 2)
    }

    /// The retry travels in the block of the stream's first event, never in a block of its own (which
    /// httpx-sse turns into an empty event).
    @Test func theRetryIsInTheFirstEventsBlock() {
        let first = SSEEncoder.preamble(retryMilliseconds: 3000) + SSEEncoder.position(id: "7")
        let blocks = String(decoding: first, as: UTF8.self).components(separatedBy: "\n\n").filter { !$0.isEmpty }
        #expect(blocks.count == 1 && blocks[0].contains("retry: 3000") && blocks[0].contains("event: ready"), "\(blocks)")
    }
}

@Suite struct SSEPositionTests {
    /// A position is an event with data (`ready`): every client library records its id, where some
    /// ignored a block of `id:` alone.
    @Test func aPositionIsAReadyEventThatSetsTheLastEventId() {
        var parser = SSEParser()
        let events = parser.feed(SSEEncoder.position(id: "42") + SSEEncoder.encode(SSEMessage(id: nil, event: "x", data: Array("d".utf8))))
        #expect(events.map(\.event) == ["ready", "x"])
        #expect(events.first?.data == #"{"lastEventId":"42"}"#)
        #expect(parser.lastEventId == "42")
    }
}
