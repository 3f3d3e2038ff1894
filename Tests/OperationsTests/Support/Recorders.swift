// Recorders.swift — thread-safe logs and counters that operation bodies write to, deadlines,
// a concurrency gauge and seeded randomness.
import Glibc
import Testing

enum Limits {
    /// Deadline of a wait for work that should finish well within a second (generous, so a loaded
    /// 2-core machine or ThreadSanitizer never turns a slow run into a false failure).
    static let waitSeconds: Double = 20
    /// How long "nothing happens" is watched for in negative checks (a suspended queue, a width-0
    /// queue, an operation whose dependency has not finished). Never used as synchronisation.
    static let quietSeconds: Double = 0.1
}

/// Sleeps `seconds`. Only for "nothing may happen during this time" checks.
func quietPeriod(_ seconds: Double = Limits.quietSeconds) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// A log of values in the order they were appended, from any thread.
final class Recorder<Element: Sendable>: @unchecked Sendable {
    private let values = Locked<[Element]>([])
    init() {}
    func append(_ value: Element) { values.withLock { $0.append(value) } }
    var snapshot: [Element] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}

/// A counter, from any thread.
final class Counter: @unchecked Sendable {
    private let value = Locked(0)
    init() {}
    /// Adds one and returns the new value.
    @discardableResult
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    var current: Int { value.withLock { $0 } }
}

/// Counts bodies that run at the same time and remembers the most seen at once.
final class ConcurrencyGauge: @unchecked Sendable {
    private let state = Locked((now: 0, max: 0))
    init() {}
    func enter() { state.withLock { $0.now += 1; $0.max = Swift.max($0.max, $0.now) } }
    func leave() { state.withLock { $0.now -= 1 } }
    var maximum: Int { state.withLock { $0.max } }
}


