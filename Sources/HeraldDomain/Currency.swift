import Synchronization

/// The currencies a screen can show amounts in, and auctions are priced in. An amount is an integer
/// of the currency's minor unit: cents, euro cents, kuruş, milligrams of gold.
public enum Currency: String, Sendable, CaseIterable {
    case dollar, euro, turkishLira, gramGold

    /// Digits after the decimal point: an amount of 12345 is 123.45 dollars, or 12.345 g of gold.
    public var minorDigits: Int { self == .gramGold ? 3 : 2 }
}
