// Randomness.swift — seeded randomness for both test targets: every randomised test prints its
// seed, and OPERATIONS_TEST_SEED replays it.
import Foundation

/// The seed for a randomised test: OPERATIONS_TEST_SEED when set (to replay a run), else a
/// fresh one. It is printed either way; tests put it into their failure messages.
public func testSeed(_ name: String = #function) -> UInt64 {
    let seed: UInt64
    if let text = ProcessInfo.processInfo.environment["OPERATIONS_TEST_SEED"], let value = UInt64(text) {
        seed = value
    } else {
        seed = UInt64.random(in: 1...UInt64.max)
    }
    print("[\(name)] seed \(seed) (replay with OPERATIONS_TEST_SEED=\(seed))")
    return seed
}

/// SplitMix64: small, fast and good enough to shuffle test inputs.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public let seed: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// Seeded from `testSeed(label)`.
    public init(_ label: String) { self.init(seed: testSeed(label)) }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// True when the process runs under ThreadSanitizer (its runtime exports __tsan_init).
public let runningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil
