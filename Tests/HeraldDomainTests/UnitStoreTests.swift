import HeraldDomain
import Testing

@Suite struct UnitStoreTests {
    @Test func unitsAreCreatedReplacedAndRemoved() throws {
        let sink = RecordingSink()
        let store = UnitStore(sink: sink)
        #expect(try store.put(HeraldDomain.Unit(id: "a", name: "Alpha", status: .healthy), in: ChangeBatch()))
        #expect(try !store.put(HeraldDomain.Unit(id: "a", name: "Alpha", status: .dead), in: ChangeBatch()))
        #expect(try store.get("a").status == .dead)
        try store.delete("a", in: ChangeBatch())
        #expect(sink.names == ["unit", "unit", "removed"])
        let created = sink.all.compactMap { if case .recordSaved(_, let previous) = $0 { previous == nil } else { nil } }
        #expect(created == [true, false])
        #expect(!store.exists("a"))
        #expect(throws: DomainError.self) { try store.put(HeraldDomain.Unit(id: "bad id!", name: "x", status: .healthy), in: ChangeBatch()) }
        #expect(throws: DomainError.notFound("unit", "a")) { try store.delete("a", in: ChangeBatch()) }
        #expect(sink.all.count == 3, "refused changes publish nothing")
    }
}
