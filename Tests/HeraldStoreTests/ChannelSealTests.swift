@testable import HeraldStore
import Testing

/// The seal replicas put on their notifications: HMAC-SHA256 of the channel, a newline and the
/// payload, in base64url without padding. Replicas of two builds share a channel, so the seal's bytes
/// must not change; these were made with Python's `hmac` and `base64.urlsafe_b64encode`.
struct ChannelSealTests {
    let seal = ChannelSeal(key: Array(0..<32))

    @Test(arguments: [(#"{"a":1}"#, "gt9qzHky0jQ-WJrl6jOryXLT-4rYKdBKGnXlFXD8Twg"), ("xxxxxxx", "-Qu_yyXaL6U3bXtAp8_03MMW-eIv-JQVIxjD8LrNojQ")])
    func aPayloadIsSealedAsAnotherImplementationSealsIt(payload: String, mac: String) {
        #expect(seal.sealNews(payload, channel: "herald_news") == mac + ":" + payload)
        #expect(seal.openNews(mac + ":" + payload, channel: "herald_news") == payload)
    }

    @Test func aSealOfAnotherChannelOrKeyIsRefused() {
        let sealed = seal.sealNews("xxxxxxx", channel: "herald_news")
        #expect(seal.openNews(sealed, channel: "herald_other") == nil)
        #expect(ChannelSeal(key: Array(1...32)).openNews(sealed, channel: "herald_news") == nil)
    }
}
