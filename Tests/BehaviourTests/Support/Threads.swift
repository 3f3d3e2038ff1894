// Threads.swift — a bounded run on a thread of our own (the threads, the lock and the thread id
// are in OperationsTestSupport: `Thread.detachNewThread` is Foundation's, and Foundation's
// `Operation` would clash with ours in the Operations build), and the CPUs online.
//
// Not Synchronization.Mutex: ThreadSanitizer on this toolchain does not see its futex-based
// lock and would report false races on the protected values.
import Testing


/// Runs `body` on a new thread and waits for it (bounded). Records an issue on timeout.
func runOnNewThread(_ what: String, seconds: Double = Deadline.seconds,
                    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping @Sendable () -> Void) {
    let done = onNewThread(body)
    waitFor(done, what, seconds: seconds, sourceLocation: sourceLocation)
}

/// The number of CPUs online.
let onlineCPUs = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
