import Synchronization

/// A flag shared by reference between threads.
final class SharedFlag: Sendable {
    private let value: Atomic<Bool>

    init(_ initial: Bool) { value = Atomic(initial) }

    var isSet: Bool { value.load(ordering: .relaxed) }
    func set(_ new: Bool) { value.store(new, ordering: .relaxed) }
    /// Sets it; returns whether it was set before.
    func raise() -> Bool { value.exchange(true, ordering: .relaxed) }
}
