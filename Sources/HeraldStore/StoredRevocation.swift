/// A revocation as stored (`Revocation` in HeraldAuth): what it names, by key (`sub:…`, `jti:…`,
/// `all`), the time before which the tokens it covers were issued (seconds since 1970; nil: any),
/// and when it can be forgotten. One row per key: a later one of the same key replaces it.
public struct StoredRevocation: Sendable, Equatable {
    public let key: String
    public let issuedBefore: Double?
    public let until: Double

    public init(key: String, issuedBefore: Double?, until: Double) {
        (self.key, self.issuedBefore, self.until) = (key, issuedBefore, until)
    }
}
