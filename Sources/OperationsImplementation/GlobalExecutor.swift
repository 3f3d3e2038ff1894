// GlobalExecutor.swift — the queues' workers as Swift concurrency's global executor, on request
// (`OperationsRuntime.installAsGlobalExecutor()`): every job the runtime would give its default
// (cooperative) pool becomes a core task of one default-width core queue, at the QoS of its
// task's priority. A task that calls into a queue used as a task executor and awaits the answer
// then hands over between our workers only: no sleeping Dispatch thread to wake on the way back
// (issue 36, item 2: that wake-up was most of a round trip's 5–12 µs).
//
// The mechanism is the runtime's hook for the global executor's enqueue
// (`swift_task_enqueueGlobal_hook`, read by `swift_task_enqueueGlobal` before it calls its own
// implementation, as SwiftNIO's opt-in does). Delayed jobs (`Task.sleep`) keep the runtime's own
// timers: they run on Dispatch's threads, and what they enqueue next comes here. The main
// actor's executor is not touched.
import Glibc
import OperationsCore
import Synchronization

extension OperationsRuntime {
    /// Makes the runtime's workers Swift concurrency's global executor, for the rest of the
    /// process: tasks that no actor or task executor claims (`Task { }`, `Task.detached`, child
    /// tasks, `async let`, nonisolated async functions) run their steps on the workers of their
    /// priority's class (see `QualityOfService`'s mapping: `.medium` runs at `.default`), on a
    /// queue of default width, instead of on Swift's cooperative pool. Returns `true` once
    /// installed (also when it already was), `false` when the Swift runtime offers no hook for
    /// it (nothing changes then).
    ///
    /// Why: a task that awaits work on an `OperationQueue` used as a task executor hands over
    /// twice per call; with both pools ours, neither hand-over waits for a sleeping thread of
    /// the other's to wake. The workers' nice values, placement, blocked-worker monitor (a job
    /// that blocks its thread draws a spare worker, where the cooperative pool would starve),
    /// counters and trace then cover those tasks too.
    ///
    /// Call it early, before tasks start: jobs already handed to the cooperative pool still run
    /// there. It cannot be undone. `Task.sleep` wakes its task on Dispatch's threads, which hand
    /// the task's next job here. `OperationQueue.current` stays `nil` in those tasks, as on the
    /// cooperative pool. Not part of Foundation's API.
    @discardableResult
    public static func installAsGlobalExecutor() -> Bool {
        GlobalExecutor.install()
    }

    /// Whether ``installAsGlobalExecutor()`` made the workers Swift's global executor.
    public static var isGlobalExecutor: Bool { GlobalExecutor.installed.load(ordering: .acquiring) }
}

/// The hook's type in the Swift runtime: the job and the runtime's own enqueue, Swift calling
/// convention without a context (`SWIFT_CC(swift) void (*)(Job *, void (*)(Job *))`).
typealias EnqueueGlobalOriginal = @convention(thin) (UnownedJob) -> Void
typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, EnqueueGlobalOriginal) -> Void

/// The global executor's queue and its installation.
enum GlobalExecutor {
    /// Set once the hook is installed.
    static let installed = Atomic<Bool>(false)

    /// The core queue the jobs go to: default width, default QoS, untracked, with no context
    /// (so `OperationQueue.current` is nil in its jobs). Made once, never freed.
    nonisolated(unsafe) static let queue: OpaquePointer = {
        guard let queue = op_queue_create("Swift concurrency (global executor)", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT) else {
            fatalError("Operations: the global executor's queue could not be created (out of memory)")
        }
        return queue
    }()

    /// The task executor the jobs run on (what `runSynchronously(on:)` reports as the current
    /// task executor while one runs).
    static let executor = GlobalTaskExecutor()

    /// Installs the hook. Idempotent without a lock: every call stores the same function.
    static func install() -> Bool {
        if installed.load(ordering: .acquiring) { return true }
        // RTLD_DEFAULT (the global scope: the concurrency runtime the process loaded).
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") else {
            return false
        }
        _ = queue // made before the first job can come
        let hook = symbol.assumingMemoryBound(to: Optional<EnqueueGlobalHook>.self)
        // A plain pointer-sized store, which the runtime reads without synchronisation, as every
        // installer of this hook does: an enqueue on another thread sees the old or the new one.
        hook.pointee = { job, _ in GlobalExecutor.enqueue(job) }
        // releasing: whoever reads true sees the queue made.
        installed.store(true, ordering: .releasing)
        return true
    }

    /// A job for the global executor: a core task at the QoS its priority maps to.
    static func enqueue(_ job: UnownedJob) {
        let qos = QualityOfService.coreQoS(forJobPriority: job.priority.rawValue)
        let rc = op_queue_submit_job(queue, runGlobalJob, unsafeBitCast(job, to: UnsafeMutableRawPointer.self), qos)
        if rc != 0 { fatalError("Operations: a job of the global executor could not be enqueued (core error \(rc))") }
    }
}

/// The core task body of a global executor's job; its context is the job.
private let runGlobalJob: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    let job = unsafeBitCast(context.unsafelyUnwrapped, to: UnownedJob.self)
    job.runSynchronously(on: GlobalExecutor.executor.asUnownedTaskExecutor())
}

/// The task executor that stands for the global executor's queue while its jobs run. Jobs that
/// name it as their preference (none do unless handed it) go to the same queue.
final class GlobalTaskExecutor: TaskExecutor, @unchecked Sendable {
    func enqueue(_ job: consuming ExecutorJob) {
        GlobalExecutor.enqueue(UnownedJob(job))
    }
}
