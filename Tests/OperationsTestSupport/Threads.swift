// Threads.swift — threads of our own for tests, built without the runtime under test:
// pthreads (neither Swift Testing's workers nor a runtime's), with the closure released before
// the thread reports back, and the kernel id of the calling thread.
import Glibc

/// What a thread of ours runs; handed to pthread_create as its context.
private final class ThreadStart: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Runs `body` on a new detached thread (a pthread of our own: neither one of Swift Testing's
/// workers nor one of the runtime's). What the guide's samples do with
/// `[NSThread detachNewThreadSelector:…]`.
public func detachThread(_ body: @escaping @Sendable () -> Void) {
    let start = Unmanaged.passRetained(ThreadStart(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { context in
        Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, start)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}

/// Calls `body` on a new thread, and returns a latch that opens when it returned.
///
/// `body`, and everything it captured, is released before the latch opens: an operation whose
/// last reference went with that closure is freed on that thread while ThreadSanitizer still
/// follows it, and "the latch opened" means "the thread holds nothing of the test's".
@discardableResult
public func onNewThread(_ body: @escaping @Sendable () -> Void) -> Latch {
    let done = Latch()
    let handOver = Locked<(@Sendable () -> Void)?>(body)
    detachThread {
        do {
            let body = handOver.withLock { pending in
                defer { pending = nil }
                return pending
            }
            body?()
        }  // `body` is released here, on this thread
        done.open()
    }
    return done
}

/// Kernel thread id of the calling thread (gettid(2), looked up: Glibc does not export it
/// without _GNU_SOURCE).
private typealias GetTid = @convention(c) () -> pid_t
private let gettidFunction: GetTid? = dlsym(nil, "gettid").map { unsafeBitCast($0, to: GetTid.self) }
public func currentThreadID() -> Int32 { gettidFunction?() ?? -1 }

