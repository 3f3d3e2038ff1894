// Sync.swift — test-side synchronisation that does not use the core under test: a latch built on
// NSCondition (pthread mutex + condition variable, which ThreadSanitizer understands), plain
// pthreads with a bounded join, and a lock that lets a suite have the process to itself.
import Foundation
import Glibc
import Synchronization
import Testing



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
