import Synchronization

/// The currencies a screen can show amounts in.
public enum Currency: String, Sendable, CaseIterable {
    case dollar, euro, turkishLira, gramGold
}
