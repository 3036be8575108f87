import HeraldThreads
import Foundation
import HeraldCore
import HeraldDomain
import HeraldJSON
import HeraldStore
import Logging
import Synchronization

// Idempotency: the answers kept with their changes, in the same transaction, and read back for a replay.
extension Journal {
    /// The answer kept for an idempotency key, on the writer (a shared store's batch has caught up,
    /// so a retry sent to another replica finds it).
    func keptAnswer(for key: String, in batch: ChangeBatch) throws(DomainError) -> KeptAnswer? {
        guard let store else { return state.withValue { $0.kept[key] } }
        do throws(StoreError) {
            return try store.keptAnswer(for: key)
        } catch {
            throw Self.refusal(for: error, topic: "an idempotency key")
        }
    }

    /// Keeps the answer to a change in the change's batch, so that both commit or neither. If it
    /// cannot be kept, the change still stands (it is in the batch): only the protection of a retry
    /// is lost, and the log says so.
    func keep(_ answer: KeptAnswer, in batch: ChangeBatch) {
        guard let store else {
            state.withValue { state in
                if state.kept.updateValue(answer, forKey: answer.key) == nil { state.keptOrder.append(answer.key) }
                if state.keptOrder.count > Self.keptInMemoryLimit {
                    let dropped = state.keptOrder.count - Self.keptInMemoryLimit
                    for key in state.keptOrder.prefix(dropped) { state.kept[key] = nil }
                    state.keptOrder.removeFirst(dropped)
                }
            }
            return
        }
        do throws(StoreError) {
            try store.keep(answer)
        } catch {
            logger.warning("the answer for an Idempotency-Key could not be kept", metadata: ["store.error": "\(error)"])
        }
    }

    /// Stores a revocation in the current batch (nothing to store without a store: it lasts as long
    /// as the process).
    func revoke(_ revocation: StoredRevocation, in batch: ChangeBatch) throws(DomainError) {
        guard let store else { return }
        do throws(StoreError) {
            try store.revoke(revocation)
        } catch {
            throw Self.refusal(for: error, topic: "a revocation")
        }
    }
}
