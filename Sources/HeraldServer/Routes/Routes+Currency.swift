import HTTPTypes
import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addCurrency(_ currency: CurrencySetting, events: EventRoutes) {
        add(.get, "/currency") { _ in .json(currency.value.json) }
        write(.put, "/currency", topic: "currency") { request, _ in
            let wanted = try Currency(json: try request.json())
            return { () throws(DomainError) in
                try currency.set(wanted)
                return .json(wanted.json)
            }
        }
        add(.get, "/currency/events") { request in try events.stream(request, topics: [CurrencySetting.topic]) }
    }
}
