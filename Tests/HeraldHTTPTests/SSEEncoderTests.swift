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
}

@Suite struct SSEPositionTests {
    @Test func aPositionSetsTheLastEventIdAndDispatchesNothing() {
        var parser = SSEParser()
        let events = parser.feed(SSEEncoder.position(id: "42") + SSEEncoder.encode(SSEMessage(id: nil, event: "x", data: Array("d".utf8))))
        #expect(events.map(\.event) == ["x"])
        #expect(parser.lastEventId == "42")
    }
}
