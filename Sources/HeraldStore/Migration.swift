/// One step of a schema, found by its name. A step never changes once released: a change is a new step.
struct Migration: Sendable {
    let name: String
    let sql: String

    init(_ name: String, _ sql: String) {
        self.name = name
        self.sql = sql
    }

    /// The refusal of a database that ran steps this Herald does not know.
    static func newer(_ location: String, _ unknown: [String]) -> StoreError {
        StoreError("the database \(location) was migrated by a newer Herald (\(unknown.joined(separator: ", ")))", kind: .other)
    }
}

extension [Migration] {
    /// The steps a database that ran `applied` has yet to run, in order. Refuses one that ran a step
    /// this Herald does not know: a newer Herald migrated it, and this one would misread it.
    func pending(applied: some Sequence<String>, in location: String) throws(StoreError) -> [Migration] {
        let applied = Set(applied)
        let unknown = applied.subtracting(map(\.name)).sorted()
        guard unknown.isEmpty else { throw Migration.newer(location, unknown) }
        return filter { !applied.contains($0.name) }
    }
}
