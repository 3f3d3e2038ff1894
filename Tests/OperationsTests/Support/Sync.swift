// Sync.swift — test-side synchronisation that does not use the library under test: a lock on a
// pthread mutex, a value behind it, a latch with a deadline, and threads of our own.
//
// Not Synchronization.Mutex: ThreadSanitizer on this toolchain does not see its futex-based lock
// and would report false races on the protected values. pthread mutexes and NSCondition are
// intercepted by TSan.
@_exported import OperationsTestSupport
import Foundation
import Glibc
import Testing

/// A pthread mutex.
final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}



/// Waits for `target` arrivals at `latch`; on timeout records an issue naming `what` and returns
/// false (the caller should then stop: what it waited for did not happen).
@discardableResult
func waitFor(_ latch: Latch, _ what: String, count target: Int = 1, seconds: Double = Limits.waitSeconds,
            sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if latch.wait(for: target, seconds: seconds) { return true }
    Issue.record("timed out after \(seconds) s waiting for \(what) (\(latch.arrivals)/\(target) arrivals)",
                 sourceLocation: sourceLocation)
    return false
}

/// Calls `body` on a new thread (a `Foundation.Thread`, which is not one of Swift Testing's
/// workers nor one of the runtime's), and returns a latch that opens when it returned.
///
/// `body`, and everything it captured, is released before the latch opens. Foundation frees a
/// thread's closure only while the thread exits, after ThreadSanitizer has already retired the
/// thread: an operation whose last reference went with that closure would be freed there, and
/// TSan would report its (correctly ordered) memory reuse as a race with the thread's earlier
/// reads. It also makes "the latch opened" mean "the thread holds nothing of the test's".
@discardableResult
func onNewThread(_ body: @escaping @Sendable () -> Void) -> Latch {
    let done = Latch()
    let handOver = Locked<(@Sendable () -> Void)?>(body)
    Thread.detachNewThread {
        do {
            let body = handOver.withLock { pending in
                defer { pending = nil }
                return pending
            }
            body?()
        }  // `body` is released here, on this thread, while TSan still follows it
        done.open()
    }
    return done
}

/// Runs `body` on a new thread and waits for it (bounded). Records an issue on timeout.
func runOnNewThread(_ what: String, seconds: Double = Limits.waitSeconds,
                    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping @Sendable () -> Void) {
    let done = onNewThread(body)
    waitFor(done, what, seconds: seconds, sourceLocation: sourceLocation)
}

/// Kernel thread id of the calling thread (gettid(2), looked up: Glibc does not export it without
/// _GNU_SOURCE).
private typealias GetTid = @convention(c) () -> pid_t
private let gettidFunction: GetTid? = dlsym(nil, "gettid").map { unsafeBitCast($0, to: GetTid.self) }
func currentThreadID() -> Int32 { gettidFunction?() ?? -1 }
