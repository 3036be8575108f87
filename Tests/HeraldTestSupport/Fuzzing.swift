import Foundation

/// Property-based fuzzing for the parsers that read client input: seeds mutated byte by byte (flips,
/// inserts, deletes, repeats), thousands of times per run. A trap kills the test process, so a crash
/// fails the run; each property must also hold. The generator is seeded, so a failure names a seed
/// that reproduces it (`HERALD_FUZZ_SEED`; `HERALD_FUZZ_ITERATIONS` sets how many).
public enum Fuzzing {
    public static let iterations = Int(ProcessInfo.processInfo.environment["HERALD_FUZZ_ITERATIONS"] ?? "") ?? 50_000
    public static let seed = UInt64(ProcessInfo.processInfo.environment["HERALD_FUZZ_SEED"] ?? "") ?? 0x5EED_4E4A_1D

    /// SplitMix64: small, fast, reproducible.
    public struct Generator: RandomNumberGenerator {
        var state: UInt64
        public init(state: UInt64) { self.state = state }
        public mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let interesting: [UInt8] = Array("{}[]\",:\\/%?&=;+-.eE0123456789 \t\r\nTZtz:".utf8) + [0x00, 0x7F, 0x80, 0xC3, 0xFF, 0xED, 0xA0]

    /// One mutation of `input`.
    static func mutate(_ input: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(interesting.randomElement(using: &random) ?? 0, at: position)
            case 2 where !bytes.isEmpty: bytes.remove(at: position)
            case 3 where !bytes.isEmpty:
                let end = min(bytes.count, position + Int.random(in: 1...8, using: &random))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            case 4 where !bytes.isEmpty: bytes[position] = interesting.randomElement(using: &random) ?? 0
            default: bytes.append(interesting.randomElement(using: &random) ?? 0)
            }
        }
        return bytes
    }

    /// Runs `property` on `iterations` mutations of the seeds (and on the seeds themselves); `salt`
    /// gives each property its own sequence.
    public static func fuzz(_ seeds: [String], salt: UInt64, _ property: ([UInt8]) -> Void) {
        var random = Generator(state: seed ^ salt)
        let corpus = seeds.map { Array($0.utf8) }
        for seed in corpus { property(seed) }
        for _ in 0..<iterations {
            var input = corpus.randomElement(using: &random) ?? []
            for _ in 0..<Int.random(in: 1...3, using: &random) { input = mutate(input, &random) }
            property(input)
        }
    }
}
