import CLinux

public struct TestError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
    public static let timeout = TestError("timed out")
}
