import HeraldThreads
import Synchronization

/// A token bucket per key (a client address, a token's subject): `rate` a second, and up to `burst`
/// at once after a quiet spell. A key's bucket is forgotten once it is full again, so the memory held
/// is that of the keys active in the last few seconds.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        /// Past this many buckets, the full ones are dropped.
        var sweepAt = 4096
    }

    public let rate: Int
    public let burst: Int
    private let state = Lock(State())

    /// - Parameters:
    ///   - rate: takes allowed a second, at least 1.
    ///   - burst: takes allowed at once; at least 1, and by default one second's worth.
    public init(rate: Int, burst: Int? = nil) {
        self.rate = max(rate, 1)
        self.burst = max(burst ?? rate, 1)
    }

    /// Takes one for `key`: nil when allowed, else how long until one would be.
    public func take(_ key: String, at now: ContinuousClock.Instant = .now) -> Duration? {
        let (rate, burst) = (Double(rate), Double(burst))
        return state.withLock { state -> Duration? in
            var bucket = state.buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = bucket.updated.duration(to: now)
            let seconds = elapsed.inSeconds
            bucket.tokens = min(burst, bucket.tokens + max(seconds, 0) * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                state.buckets[key] = bucket
                return .seconds((1 - bucket.tokens) / rate)
            }
            bucket.tokens -= 1
            state.buckets[key] = bucket
            if state.buckets.count > state.sweepAt { Self.sweep(&state, now: now, rate: rate, burst: burst) }
            return nil
        }
    }

    private static func sweep(_ state: inout State, now: ContinuousClock.Instant, rate: Double, burst: Double) {
        state.buckets = state.buckets.filter { _, bucket in
            let elapsed = bucket.updated.duration(to: now)
            let seconds = elapsed.inSeconds
            return bucket.tokens + seconds * rate < burst
        }
        // Many keys busy at once: sweep again only when the table has doubled.
        state.sweepAt = max(4096, state.buckets.count * 2)
    }
}

extension Duration {
    /// In seconds, with their fraction.
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// Whole seconds, rounded up, at least 1: a `Retry-After` value.
    public var retryAfterSeconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}
