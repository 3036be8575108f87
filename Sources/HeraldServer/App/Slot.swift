import HeraldThreads
import Synchronization

/// A value filled in after what reads it is made.
final class Slot<Value: Sendable>: Sendable {
    private let stored = Lock<Value?>(nil)

    var value: Value? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
