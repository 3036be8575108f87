import Synchronization

/// A flag set once, shared by reference.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    /// Sets the flag; true when it was not set before.
    func set() -> Bool { !value.exchange(true, ordering: .relaxed) }
}
