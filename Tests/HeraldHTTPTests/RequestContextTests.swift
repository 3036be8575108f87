@testable import HeraldHTTP
import HTTPTypes
import Testing

@Suite struct RequestContextTests {
    /// A kept context is reset to what a new one holds. The list of stored properties is written
    /// here: a property added to `RequestContext` fails this test until it is listed, and set
    /// differently below, so `reset` cannot forget it.
    @Test func aResetContextIsANewOne() {
        let used = RequestContext(rawTarget: "/units/a?x=1")
        let names = Mirror(reflecting: used).children.compactMap(\.label)
        #expect(names == ["rawTarget", "target", "received", "typedHead", "client", "socketAsAccepted", "started", "method",
                          "http11", "startedAt", "id", "route", "body", "tooLarge", "bodyDue", "pending"])
        used.target = try? RequestTarget("/units/a?x=1")
        used.received = [("Host", "example.org"), ("X-Request-ID", "abc")]
        _ = used.head
        used.client = "192.0.2.1"
        used.socketAsAccepted = true
        used.started = true
        used.method = "PUT"
        used.http11 = true
        used.startedAt = .now
        used.id = "abc"
        used.route = "/units/{id}"
        used.body = Array("{\"name\":\"a\"}".utf8)
        used.tooLarge = true
        used.bodyDue = true
        used.pending = PendingAnswer(connection: OpaquePointer(bitPattern: 1)!, headers: [:])
        let fresh = RequestContext(rawTarget: "/currency")
        // Every property of the used context differs from a new one's before the reset...
        #expect(zip(Self.values(used), Self.values(fresh)).allSatisfy { $0.value != $1.value })
        used.reset(rawTarget: "/currency")
        // ...and none after it.
        for (after, new) in zip(Self.values(used), Self.values(fresh)) { #expect(after.value == new.value, "\(after.name)") }
        #expect(used.head.isEmpty)
    }

    /// A context goes back to the pool only if nothing else holds it, and the pool hands it out again.
    @Test func thePoolKeepsOnlyContextsNobodyElseHolds() {
        var pool = RequestContexts()
        let held = pool.take(rawTarget: "/a")
        pool.give(held)
        #expect(pool.count == 0)
        pool.give(RequestContext(rawTarget: "/b"))
        #expect(pool.count == 1)
        let reused = pool.take(rawTarget: "/c")
        #expect(reused.rawTarget == "/c" && pool.count == 0)
        _ = held
    }

    /// Each stored property's name and value as text (a context's values are all printable).
    private static func values(_ context: RequestContext) -> [(name: String, value: String)] {
        Mirror(reflecting: context).children.map { ($0.label ?? "", String(describing: $0.value)) }
    }
}
