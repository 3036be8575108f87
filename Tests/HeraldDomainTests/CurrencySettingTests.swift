import HeraldDomain
import Testing

@Suite struct CurrencySettingTests {
    @Test func currencyNotifiesOnlyRealChanges() throws {
        let sink = RecordingSink()
        let currency = CurrencySetting(sink: sink)
        try currency.set(.dollar, in: ChangeBatch())
        #expect(sink.all.isEmpty)
        try currency.set(.euro, in: ChangeBatch())
        guard case .currencyChanged(let now, let previous)? = sink.all.first else {
            Issue.record("a change of the default is an event")
            return
        }
        #expect(now == .euro && previous == .dollar)
        #expect(currency.value == .euro)
    }
}
