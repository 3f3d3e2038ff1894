// Recording.swift — what test bodies write to and tests read back, shared by every test target
// and built without the runtime under test: a pthread lock, a log, a counter, a concurrency
// gauge, and quiet periods for "nothing may happen meanwhile" checks.
//
// Not Synchronization.Mutex: ThreadSanitizer on this toolchain does not see its futex-based
// lock and would report false races on the protected values.
import Glibc

/// A pthread mutex.
public final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A log of values in the order they were appended, from any thread.
public final class Recorder<Element: Sendable>: @unchecked Sendable {
    private let values = Locked<[Element]>([])
    public init() {}
    public func append(_ value: Element) { values.withLock { $0.append(value) } }
    public var snapshot: [Element] { values.withLock { $0 } }
    public var count: Int { values.withLock { $0.count } }
}

/// A counter, from any thread.
public final class Counter: @unchecked Sendable {
    private let value = Locked(0)
    public init() {}
    /// Adds one and returns the new value.
    @discardableResult
    public func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    public var current: Int { value.withLock { $0 } }
}

/// Counts bodies that run at the same time and remembers the most seen at once.
public final class ConcurrencyGauge: @unchecked Sendable {
    private let state = Locked((now: 0, max: 0))
    public init() {}
    public func enter() { state.withLock { $0.now += 1; $0.max = Swift.max($0.max, $0.now) } }
    public func leave() { state.withLock { $0.now -= 1 } }
    public var maximum: Int { state.withLock { $0.max } }
}

/// Sleeps `seconds`. Only for "nothing may happen during this time" checks, never as
/// synchronisation.
public func quietPeriod(_ seconds: Double) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
