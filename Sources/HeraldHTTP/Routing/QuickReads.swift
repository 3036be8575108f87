/// GETs of subjects the application keeps encoded (an auction, the currency, a unit), answered without
/// a `Request`, the router or a `Response`: the layers every other request crosses cost more than the
/// read itself (`git show dad6eb7:BENCHMARKS.md`, "Reads at the limit").
///
/// A quick read comes after every check of the head that the general path makes (Host, the limits,
/// the target, the guard), is counted and logged the same, and carries the same fields in the same
/// order. It is taken only where nothing in the request could make the general path answer otherwise:
/// a GET without a query, `Origin` (CORS decides) or a precondition (`If-None-Match`, 304); a path the
/// router gives to the same route; and a subject that exists. Anything else goes the general way.
public struct QuickReads: Sendable {
    /// A subject's kept JSON and entity tag, the last event the state reflects (`Herald-Event-ID`), and
    /// the route's pattern (for the metrics and the access log).
    public struct Answer: Sendable {
        public let route: String
        public let body: [UInt8]
        public let etag: String
        public let eventID: UInt64
        /// The generation of the state read (`ReadWriteSection.generation`) when the answer stays the
        /// same until that state changes (nothing in it changes with time); nil otherwise.
        public let generation: UInt64?
        /// Which read answered, and its parameter: the subject, for `QuickResponses`.
        var entry = 0
        var parameter: String?

        public init(route: String, body: [UInt8], etag: String, eventID: UInt64, generation: UInt64? = nil) {
            (self.route, self.body, self.etag, self.eventID, self.generation) = (route, body, etag, eventID, generation)
        }
    }

    /// Reads a subject: the value of the pattern's one parameter (nil for a pattern without one), and
    /// nil back when it is not there (the general path answers the 404).
    public typealias Read = @Sendable (_ parameter: String?) -> Answer?

    struct Entry: Sendable {
        let literals: [String?]
        let parameter: Int?
        /// What more literal routes put at the parameter's place: those paths are theirs (a few
        /// words, compared in turn: cheaper than hashing).
        let shadowed: [String]
        let read: Read
    }

    private let entries: [Entry]
    /// Fields every answer carries after `Herald-Event-ID`, before `X-Request-ID` (CORS's, for a
    /// request without `Origin`).
    let fields: [(name: String, value: String)]
    /// The generation of the state the reads see now (`Answer.generation`); nil: answers are never
    /// given again without a read.
    let generation: (@Sendable () -> UInt64)?

    /// - Parameters:
    ///   - router: the router that answers everything else; a pattern it could give to another GET
    ///     route is left out (`Router.literals(shadowing:)`).
    ///   - reads: each pattern (one parameter at most) and how to read it.
    ///   - generation: the generation of the state the reads see now (`Answer.generation`).
    public init(router: Router, fields: [(name: String, value: String)], reads: [(pattern: String, read: Read)],
                generation: (@Sendable () -> UInt64)? = nil) {
        self.fields = fields
        self.generation = generation
        entries = reads.compactMap { pattern, read in
            guard let shadowed = router.literals(shadowing: pattern) else { return nil }
            let literals = Router.segments(pattern).map { segment -> String? in
                if case .literal(let literal) = segment { literal } else { nil }
            }
            return Entry(literals: literals, parameter: literals.firstIndex(of: nil), shadowed: Array(shadowed), read: read)
        }
    }

    /// The answer to a GET of `target`, or nil: the general path answers. The caller has checked the
    /// head (`mayAnswer`).
    func answer(_ target: RequestTarget) -> Answer? {
        guard target.query.isEmpty else { return nil }
        let parts = target.segments
        for (number, entry) in entries.enumerated() where entry.literals.count == parts.count {
            var fits = true
            for index in parts.indices {
                if let literal = entry.literals[index], literal != parts[index] { fits = false; break }
            }
            guard fits else { continue }
            let parameter = entry.parameter.map { parts[$0] }
            if let parameter, entry.shadowed.contains(parameter) { return nil }
            guard var answer = entry.read(parameter) else { return nil }
            (answer.entry, answer.parameter) = (number, parameter)
            return answer
        }
        return nil
    }

    /// Whether nothing in the head could make the general path answer otherwise: no `Origin` (CORS
    /// decides), no `If-None-Match` (304) and no `If-Match` (412).
    static func mayAnswer(_ head: [(name: String, value: String)]) -> Bool {
        HTTPServer.first("origin", in: head) == nil && HTTPServer.first("if-none-match", in: head) == nil
            && HTTPServer.first("if-match", in: head) == nil
    }
}
