/// Why a body could not be parsed as JSON.
public struct JSONParseError: Error, Sendable, Equatable {
    public let reason: String
}
