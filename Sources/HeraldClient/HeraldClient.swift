public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A client of one Herald server: typed commands, and subjects as `AsyncSequence`s that resume
/// exactly across reconnects.
///
/// ```swift
/// let herald = HeraldClient(url: URL(string: "http://127.0.0.1:8080")!, token: { try await fetchToken() })
/// for try await auction in herald.auction("1").states { print(auction.price) }
/// try await herald.bid(on: "1", amount: 150)
/// ```
///
/// Every stream keeps the id of the last event it delivered and reconnects with `Last-Event-ID`
/// after the server's `retry:` (with exponential backoff and jitter while the server stays away),
/// so nothing is missed and nothing repeats. Cancelling the task that iterates closes the connection.
public final class HeraldClient: Sendable {
    /// Returns a bearer token (a JWT), or nil for none. Called for every connection and command, and
    /// when a stream's token is about to expire; cache in it what you can.
    public typealias TokenProvider = @Sendable () async throws -> String?

    public let url: URL
    let token: TokenProvider?
    let transport: Transport
    /// How long to wait before reconnecting when the server sent no `retry:`.
    let defaultRetry: Duration
    /// The most to wait between reconnections while the server stays away.
    let maximumRetry: Duration

    /// - Parameters:
    ///   - url: The server's base address, such as `http://127.0.0.1:8080`.
    ///   - token: Gives a bearer token for each connection; nil for a server without a key.
    ///   - configuration: The URLSession configuration; its limit of connections per host is raised
    ///     so that every stream gets its own, and its request timeout must exceed Herald's heartbeat
    ///     (15 s by default).
    ///   - defaultRetry: The wait before reconnecting when the server sent no `retry:`.
    ///   - maximumRetry: The longest wait between reconnections.
    public init(url: URL, token: TokenProvider? = nil, configuration: URLSessionConfiguration = .default,
                defaultRetry: Duration = .seconds(1), maximumRetry: Duration = .seconds(30)) {
        self.url = url
        self.token = token
        self.defaultRetry = defaultRetry
        self.maximumRetry = maximumRetry
        configuration.httpMaximumConnectionsPerHost = max(configuration.httpMaximumConnectionsPerHost, 100_000)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        transport = Transport(configuration: configuration)
    }

    deinit { transport.invalidate() }

    // MARK: Streams

    /// Every event of `topics` (such as `currency`, `auctions/1`, `units`, `auctions;status=open`),
    /// typed: a snapshot of each first, then every change in order. With `after`, it starts after that
    /// event id instead (a position read from `HeraldEvent.id` or a `Herald-Event-ID` answer).
    ///
    /// The sequence ends with a `HeraldProblem` when the server refuses the stream (400, 401, 403, 404);
    /// it reconnects by itself on anything else, and never ends otherwise.
    public func events(topics: [String], after: String? = nil) -> AsyncThrowingStream<HeraldEvent, any Error> {
        stream(topics: topics, after: after) { $0 }
    }

    /// An auction's states: its current state first, then its state after every bid and at its close.
    /// A `resync` gives its fresh state, so a consumer never sees a gap. Countdown ticks are not
    /// states: count down from `deadline`.
    public func auction(_ id: String) -> Subject<Auction> {
        Subject(client: self, topic: "auctions/" + id, path: "auctions/" + Self.segment(id)) { event in
            switch event.kind {
            case .snapshot(.auction(let auction)), .closed(let auction), .auction(let auction): auction
            case .bid(let result): result.auction
            default: nil
            }
        }
    }

    /// The default currency, and every change of it.
    public var currency: Subject<CurrencySetting> {
        Subject(client: self, topic: "currency", path: "currency", state: CurrencySetting.self) { event, last in
            switch event.kind {
            case .snapshot(.currency(let setting)): setting
            case .currency(let currency, _):
                CurrencySetting(default: currency, available: last?.available ?? Currency.allCases, minorDigits: last?.minorDigits ?? [:])
            default: nil
            }
        }
    }

    /// A trip, and its state after every change of its times.
    public func trip(_ id: String) -> Subject<Trip> {
        Subject(client: self, topic: "trips/" + id, path: "trips/" + Self.segment(id)) { event in
            switch event.kind {
            case .snapshot(.trip(let trip)), .trip(let trip, _): trip
            default: nil
            }
        }
    }

    /// A unit: its current state, its state after every change, and nil while it does not exist (not
    /// made yet, or removed).
    public func unit(_ id: String) -> Subject<HeraldUnit?> {
        Subject(client: self, topic: "units/" + id, path: "units/" + Self.segment(id), state: HeraldUnit?.self) { event, _ in
            switch event.kind {
            case .snapshot(.unit(let unit)), .unit(let unit, _): .some(unit)
            case .snapshot(.absentUnit), .removed: .some(nil)
            default: nil
            }
        }
    }

    /// A stream of `topics` whose events `transform` maps to values (nil: nothing to deliver).
    func stream<T: Sendable>(topics: [String], after: String?,
                             transform: @escaping @Sendable (HeraldEvent) -> T?) -> AsyncThrowingStream<T, any Error> {
        let (output, continuation) = AsyncThrowingStream<T, any Error>.makeStream()
        let connection = Connection(client: self, topics: topics, after: after)
        let task = Task {
            do {
                try await connection.run { event in
                    if let value = transform(event) { continuation.yield(value) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return output
    }

    // MARK: Commands

    /// Places a bid of `amount` (minor units) on auction `id`, as `bidder`, or without one as the
    /// token's `sub` (the server requires a keyed bidder to be the token's subject).
    @discardableResult
    public func bid(on id: String, amount: Int, bidder: String? = nil) async throws -> BidResult {
        var who = bidder
        if who == nil, let token = try await token?() { who = Self.subject(of: token) }
        guard let who else {
            throw HeraldProblem(title: "No bidder", status: 400, detail: "name a bidder, or give a token with a 'sub'")
        }
        let body = try JSONEncoder().encode(NewBid(bidder: who, amount: amount))
        return try await send("POST", "auctions/\(Self.segment(id))/bids", body: body)
    }

    /// Opens an auction.
    @discardableResult
    public func createAuction(item: String, countdownSeconds: Int? = nil, startingPrice: Int? = nil, currency: Currency? = nil) async throws -> Auction {
        let body = try JSONEncoder().encode(NewAuction(item: item, countdownSeconds: countdownSeconds, startingPrice: startingPrice, currency: currency))
        return try await send("POST", "auctions", body: body)
    }

    /// Sets the default currency.
    @discardableResult
    public func setCurrency(_ currency: Currency) async throws -> CurrencySetting {
        try await send("PUT", "currency", body: try JSONEncoder().encode(["default": currency]))
    }

    /// Creates or replaces unit `id`.
    @discardableResult
    public func putUnit(_ id: String, name: String, status: HeraldUnit.Status) async throws -> HeraldUnit {
        let body = try JSONEncoder().encode(NewUnit(name: name, status: status))
        return try await send("PUT", "units/" + Self.segment(id), body: body)
    }

    /// Removes unit `id`.
    public func removeUnit(_ id: String) async throws {
        _ = try await exchange("DELETE", "units/" + Self.segment(id), body: nil)
    }

    /// Moves trip `id`'s actual departure.
    @discardableResult
    public func moveDeparture(of id: String, to actualDeparture: String) async throws -> Trip {
        let body = try JSONEncoder().encode(["actualDeparture": actualDeparture])
        return try await send("PATCH", "trips/" + Self.segment(id), body: body)
    }

    /// Posts notification `name` with an optional object and a payload; answers its event id.
    @discardableResult
    public func post(notification name: String, object: String? = nil, userInfo: [String: JSON] = [:]) async throws -> String {
        let body = try JSONEncoder().encode(NewNotification(object: object, userInfo: userInfo))
        let posted: PostedID = try await send("POST", "notifications/" + Self.segment(name), body: body)
        return posted.id
    }

    /// Reads a value: `path` such as `auctions/1`, `currency` or `units/scout`.
    public func get<T: Decodable>(_ type: T.Type, _ path: String) async throws -> T {
        try await send("GET", path, body: nil)
    }

    /// Sends one request and decodes its JSON answer, or throws its problem.
    func send<T: Decodable>(_ method: String, _ path: String, body: Data?) async throws -> T {
        try JSONDecoder().decode(T.self, from: try await exchange(method, path, body: body))
    }

    /// Sends one request and answers its body, or throws its problem.
    func exchange(_ method: String, _ path: String, body: Data?) async throws -> Data {
        var request = URLRequest(url: address(path))
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token = try await token?() { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        let (head, data) = try await collect(request)
        guard (200..<300).contains(head.statusCode) else { throw Self.problem(head, data) }
        return data
    }

    /// The whole answer to `request`: for commands and reads, which are small.
    func collect(_ request: URLRequest) async throws -> (HTTPURLResponse, Data) {
        var head: HTTPURLResponse?
        var data = Data()
        for await delivery in transport.open(request) {
            switch delivery {
            case .head(let response): head = response
            case .body(let chunk): data.append(chunk)
            case .end(let error?): throw error
            case .end(nil): break
            }
        }
        try Task.checkCancellation()
        guard let head else { throw URLError(.badServerResponse) }
        return (head, data)
    }

    /// The problem in a refusal's body, or one made from its status when it has none.
    static func problem(_ head: HTTPURLResponse, _ data: Data) -> HeraldProblem {
        var problem = (try? JSONDecoder().decode(HeraldProblem.self, from: data))
            ?? HeraldProblem(title: HTTPURLResponse.localizedString(forStatusCode: head.statusCode), status: head.statusCode,
                             detail: String(decoding: data.prefix(500), as: UTF8.self))
        problem.retryAfter = (head.value(forHTTPHeaderField: "Retry-After")).flatMap { Int($0) }
        return problem
    }

    /// `path` (its segments escaped by `segment`) under the base address. Not `appendingPathComponent`,
    /// which escapes the `%` of an escape again.
    func address(_ path: String) -> URL {
        let base = url.absoluteString.hasSuffix("/") ? String(url.absoluteString.dropLast()) : url.absoluteString
        return URL(string: base + "/" + path) ?? url
    }

    /// A path segment with `/`, `?`, `#`, `%` and `;` escaped.
    static func segment(_ text: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%;")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The `sub` claim of a JWT, read without checking it (the server checks it).
    static func subject(of token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let payload = Data(base64Encoded: base64), let claims = try? JSONDecoder().decode(JSON.self, from: payload),
              case .string(let sub)? = claims["sub"] else { return nil }
        return sub
    }

    /// Reads one of Herald's times (RFC 3339, with or without milliseconds).
    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    private struct NewBid: Encodable { var bidder: String; var amount: Int }
    private struct NewAuction: Encodable { var item: String; var countdownSeconds: Int?; var startingPrice: Int?; var currency: Currency? }
    private struct NewUnit: Encodable { var name: String; var status: HeraldUnit.Status }
    private struct NewNotification: Encodable { var object: String?; var userInfo: [String: JSON] }
    private struct PostedID: Decodable { var id: String }
}

/// One subject of a Herald server: its current value, and its states as they change.
public struct Subject<State: Sendable>: Sendable {
    let client: HeraldClient
    /// The topic the stream watches, such as `auctions/1`.
    public let topic: String
    let path: String
    let step: @Sendable (HeraldEvent, State?) -> State?

    init(client: HeraldClient, topic: String, path: String, state: State.Type, step: @escaping @Sendable (HeraldEvent, State?) -> State?) {
        self.client = client
        self.topic = topic
        self.path = path
        self.step = step
    }

    init(client: HeraldClient, topic: String, path: String, step: @escaping @Sendable (HeraldEvent) -> State?) {
        self.init(client: client, topic: topic, path: path, state: State.self) { event, _ in step(event) }
    }

    /// The subject's state now, then after every change, in order; after a reconnect it goes on
    /// from the last event seen, and after a `resync` it gives the fresh state. It never ends but
    /// by cancellation or by the server's refusal (a `HeraldProblem`, such as 404 for no such subject).
    public var states: AsyncThrowingStream<State, any Error> {
        let step = self.step
        let last = StateBox<State>()
        return client.stream(topics: [topic], after: nil) { event in
            guard let state = step(event, last.value) else { return nil }
            last.value = state
            return state
        }
    }
}

extension Subject where State: Decodable {
    /// The subject's state now, read with a GET.
    public func current() async throws -> State { try await client.get(State.self, path) }
}

/// The last state a `states` sequence gave, for events that carry only a part of it.
final class StateBox<State>: @unchecked Sendable {
    // @unchecked: touched only by the one task that runs the sequence's connection.
    var value: State?
}
