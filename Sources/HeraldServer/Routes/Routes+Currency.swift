import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addCurrency(_ currency: CurrencySetting, events: EventRoutes) {
        read("/currency", parameter: nil) { _ throws(DomainError) in
            let (bytes, etag) = CurrencyEncodings.encoded(currency.value)
            return (bytes, etag, true)
        }
        write(.put, "/currency", topic: "currency") { request, _ in
            let wanted = try Currency(json: try request.json())
            let conditions = Preconditions(request)
            return { batch throws(DomainError) in
                try conditions.check(EntityTag.of(currency.latest), "the currency")
                try currency.set(wanted, in: batch)
                return .json(wanted.json, etag: EntityTag.of(wanted))
            }
        }
        add(.get, "/currency/events") { request in try events.stream(request, topics: [CurrencySetting.topic]) }
    }
}
