// Threads.swift — test-side synchronisation and threads that use neither runtime under test: a
// lock on a pthread mutex, threads of our own (pthread_create: `Thread.detachNewThread` is
// Foundation's, and Foundation's `Operation` would clash with ours in the Operations build),
// and the kernel id of the calling thread.
//
// Not Synchronization.Mutex: ThreadSanitizer on this toolchain does not see its futex-based
// lock and would report false races on the protected values.
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

/// What a thread of ours runs; handed to pthread_create as its context.
private final class ThreadStart: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Runs `body` on a new detached thread (a pthread of our own: neither one of Swift Testing's
/// workers nor one of the runtime's). What the guide's samples do with
/// `[NSThread detachNewThreadSelector:…]`.
func detachThread(_ body: @escaping @Sendable () -> Void) {
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
func onNewThread(_ body: @escaping @Sendable () -> Void) -> Latch {
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

/// Runs `body` on a new thread and waits for it (bounded). Records an issue on timeout.
func runOnNewThread(_ what: String, seconds: Double = Deadline.seconds,
                    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping @Sendable () -> Void) {
    let done = onNewThread(body)
    waitFor(done, what, seconds: seconds, sourceLocation: sourceLocation)
}

/// Kernel thread id of the calling thread (gettid(2), looked up: Glibc does not export it
/// without _GNU_SOURCE).
private typealias GetTid = @convention(c) () -> pid_t
private let gettidFunction: GetTid? = dlsym(nil, "gettid").map { unsafeBitCast($0, to: GetTid.self) }
func currentThreadID() -> Int32 { gettidFunction?() ?? -1 }

/// The number of CPUs online.
let onlineCPUs = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
