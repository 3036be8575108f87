import HeraldDomain
import HeraldHTTP
import HeraldJSON

extension Routes {
    mutating func addCurrency(_ currency: CurrencySetting, events: EventRoutes) {
        add("GET", "/currency") { _ in .json(currency.get()) }
        write("PUT", "/currency") { request in
            let json = try request.json()
            return { () throws(DomainError) in .json(try currency.set(json: json)) }
        }
        add("GET", "/currency/events") { request in try events.stream(request, topics: [CurrencySetting.topic]) }
    }
}
