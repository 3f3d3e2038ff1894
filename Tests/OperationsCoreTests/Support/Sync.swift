// Sync.swift — test-side synchronisation that does not use the core under test: a latch built on
// NSCondition (pthread mutex + condition variable, which ThreadSanitizer understands), plain
// pthreads with a bounded join, and a lock that lets a suite have the process to itself.
import Foundation
import Glibc
import Synchronization
import Testing



/// A one-shot event that async code can await without blocking a thread.
final class AsyncEvent: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false                              // guarded by `lock`
    private var waiters: [CheckedContinuation<Void, Never>] = []  // guarded by `lock`

    init() {}

    func fire() {
        lock.lock()
        fired = true
        let resumed = waiters
        waiters = []
        lock.unlock()
        for waiter in resumed { waiter.resume() }
    }

    func wait() async {
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

/// A closure for a pthread, with its index and the latch it signals when done.
private final class ThreadStart: @unchecked Sendable {
    let body: @Sendable (Int) -> Void
    let index: Int
    let done: Latch
    init(body: @escaping @Sendable (Int) -> Void, index: Int, done: Latch) {
        self.body = body
        self.index = index
        self.done = done
    }
}

/// Runs `body(0) … body(count-1)` on `count` new threads and waits for all of them to return,
/// at most `seconds`. Returns false on timeout (the threads are then left running, detached).
/// Bodies must bound their own loops with a deadline too.
func runThreads(_ count: Int, seconds: Double = Limits.waitSeconds,
                _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let done = Latch()
    var threads: [pthread_t] = []
    for index in 0..<count {
        let start = Unmanaged.passRetained(ThreadStart(body: body, index: index, done: done))
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            start.body(start.index)
            start.done.arrive()
            return nil
        }, start.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        threads.append(thread)
    }
    guard done.wait(for: count, seconds: seconds) else {
        for thread in threads { pthread_detach(thread) }
        return false
    }
    for thread in threads { pthread_join(thread, nil) }
    return true
}

// ---- process-wide exclusivity ---------------------------------------------------------------

/// A fair reader-writer lock for whole suites. Most suites share the process; a few need it to
/// themselves: the idle-CPU measurement (any other test's work would show up in the process's
/// CPU time) and the tests that change the global nice table or read every worker's nice value.
/// Waiting suspends (no thread is blocked), and it wraps suites, not test cases, so it never
/// holds one of Swift Testing's test-case slots while waiting.
actor ProcessLock {
    static let shared = ProcessLock()

    private var readers = 0
    private var writer = false
    private var waiting: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    private func canEnter(exclusive: Bool) -> Bool {
        exclusive ? (!writer && readers == 0) : !writer
    }

    private func enter(exclusive: Bool) {
        if exclusive { writer = true } else { readers += 1 }
    }

    func acquire(exclusive: Bool) async {
        if waiting.isEmpty && canEnter(exclusive: exclusive) {
            enter(exclusive: exclusive)
            return
        }
        await withCheckedContinuation { continuation in
            waiting.append((exclusive, continuation))
        }
    }

    func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        // First come, first served: a waiting exclusive suite is not overtaken by later sharers.
        while let first = waiting.first, canEnter(exclusive: first.exclusive) {
            waiting.removeFirst()
            enter(exclusive: first.exclusive)
            first.continuation.resume()
        }
    }
}

/// `.sharesProcess` / `.needsQuietProcess`: see ProcessLock.
struct ProcessExclusivity: SuiteTrait, TestTrait, TestScoping {
    let exclusive: Bool
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        await ProcessLock.shared.acquire(exclusive: exclusive)
        do {
            try await function()
        } catch {
            await ProcessLock.shared.release(exclusive: exclusive)
            throw error
        }
        await ProcessLock.shared.release(exclusive: exclusive)
    }
}

extension Trait where Self == ProcessExclusivity {
    /// The suite may run alongside other sharing suites.
    static var sharesProcess: Self { ProcessExclusivity(exclusive: false) }
    /// Nothing else in this process runs while the suite runs.
    static var needsQuietProcess: Self { ProcessExclusivity(exclusive: true) }
}
