import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addCurrency(_ currency: CurrencySetting, events: EventRoutes) {
        add("GET", "/currency") { _ in .json(currency.get()) }
        add("PUT", "/currency") { request in .json(try currency.set(json: try request.json())) }
        add("GET", "/currency/events") { request in try events.stream(request, topics: [CurrencySetting.topic]) }
    }
}
