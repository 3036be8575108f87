@testable import HeraldHTTP
import Testing

@Suite struct RequestIDTests {
    /// Made ids are the process's prefix (8 hex digits), a dash and the counter in hex, as
    /// `String(_:radix:)` writes it; the client's own id is kept when usable.
    @Test func idsAreThePrefixAndTheCounterInHex() {
        let ids = RequestIDs()
        let first = ids.next()
        let prefix = String(first.prefix(8))
        #expect(first == prefix + "-1")
        #expect(UInt32(prefix, radix: 16).map { $0 >= 0x1000_0000 } == true)
        for number in 2...5000 {
            let id = ids.next()
            #expect(id == prefix + "-" + String(number, radix: 16), "\(number)")
            if id != prefix + "-" + String(number, radix: 16) { break }
        }
        #expect(ids.id(for: "client-chose.this:1") == "client-chose.this:1")
        #expect(ids.id(for: "not usable") == prefix + "-" + String(5001, radix: 16))
    }
}
