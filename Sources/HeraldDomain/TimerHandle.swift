/// A scheduled piece of work that can be called off.
public protocol TimerHandle: Sendable {
    func cancel()
}
