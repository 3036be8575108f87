public import HTTPTypes

/// The header fields Herald reads or writes that swift-http-types does not name.
extension HTTPField.Name {
    public static let requestID = known("X-Request-ID")
    public static let lastEventID = known("Last-Event-ID")
    public static let idempotencyKey = known("Idempotency-Key")
    public static let idempotencyReplayed = known("Idempotency-Replayed")
    public static let xForwardedFor = known("X-Forwarded-For")
    public static let xAccelBuffering = known("X-Accel-Buffering")
    public static let referrerPolicy = known("Referrer-Policy")
    public static let link = known("Link")
    /// The id of the last event an answer reflects: what a change published, or what a read saw.
    public static let heraldEventID = known("Herald-Event-ID")

    /// A name written in this file, known to be a token.
    private static func known(_ name: StaticString) -> Self {
        guard let field = Self(name.description) else { preconditionFailure("\(name) is not a header field name") }
        return field
    }
}
