import HeraldCore
import HeraldDomain
import HeraldJSON

/// The units: a data store of objects by id, each with a name and a health status.
enum UnitKind: KeyedKind {
    typealias Record = HeraldDomain.Unit

    static let itemEvent: EventName = .unit
    static let filters = ["status": HeraldDomain.Unit.Status.allCases.map(\.rawValue)]
    static func filterValues(_ unit: HeraldDomain.Unit) -> [FilterValue] { [FilterValue(field: "status", value: unit.status.rawValue)] }
    static let fields: Set<String> = ["name", "status"]

    static func changed(_ unit: HeraldDomain.Unit, from previous: HeraldDomain.Unit) -> [String] {
        (previous.name == unit.name ? [] : ["name"]) + (previous.status == unit.status ? [] : ["status"])
    }

    static func json(_ unit: HeraldDomain.Unit) -> JSONValue { unit.json }
    static func record(document: JSONValue) -> HeraldDomain.Unit? { HeraldDomain.Unit(document: document) }
    static let example = #"{"name":"Registry","status":"wounded"}"#

    static func addRoutes(_ routes: inout Routes, store: UnitStore, events: EventRoutes) {
        routes.addUnits(store, events: events)
    }
}

extension HeraldDomain.Unit.Status {
    /// The face a view shows for the status.
    var face: String {
        switch self {
        case .healthy: "🙂"
        case .wounded: "🤕"
        case .dead: "💀"
        }
    }
}

extension HeraldDomain.Unit {
    var json: JSONValue {
        ["id": .string(id), "name": .string(name), "status": .string(status.rawValue), "face": .string(status.face)]
    }

    /// A unit as it was stored: its `json`, whose `face` is not read (it follows from the status); nil
    /// when it does not read. Records stored before hold no `face`, and read the same.
    init?(document: JSONValue) {
        guard let id = document["id"]?.stringValue, let name = document["name"]?.stringValue,
              let status = document["status"]?.stringValue.flatMap(HeraldDomain.Unit.Status.init(rawValue:)) else { return nil }
        self.init(id: id, name: name, status: status)
    }
}
