// Synchronization.swift — test-side synchronisation shared by the test targets, built without
// the runtime under test: a latch on NSCondition, an event async code awaits, and a locked value
// on NSLock (pthread mutex
// and condition variable, which ThreadSanitizer understands; Synchronization.Mutex is not seen
// by TSan on this toolchain and would give false races).
import Foundation

/// Counts arrivals; `wait(for:seconds:)` blocks until the count reaches a target or the deadline
/// passes. With a target of 1 it is a gate: `open()` once, any number of waiters pass.
public final class Latch: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0  // guarded by `condition`

    public init() {}

    public func arrive() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }

    public func open() { arrive() }

    public var arrivals: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    public var isOpen: Bool { arrivals > 0 }

    /// Returns false when `seconds` passed before `target` arrivals.
    @discardableResult
    public func wait(for target: Int = 1, seconds: Double = 30) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while count < target {
            if !condition.wait(until: deadline) { return count >= target }
        }
        return true
    }
}

/// A value behind a lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value  // guarded by `lock`

    public init(_ value: Value) { self.value = value }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Waits until `condition` holds, polling every millisecond up to `seconds`; false on timeout.
/// For states that no event announces (a queue's `operationCount` after a finish).
public func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        usleep(1000)
    }
    return true
}

/// A one-shot event that async code can await without blocking a thread: `fire()` lets every
/// waiter (and every later one) on.
public final class AsyncEvent: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false                                      // guarded by `lock`
    private var waiters: [CheckedContinuation<Void, Never>] = []  // guarded by `lock`

    public init() {}

    public func fire() {
        lock.lock()
        fired = true
        let resumed = waiters
        waiters = []
        lock.unlock()
        for waiter in resumed { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if fired {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}
