// GlobalExecutor.swift — the queues' workers as Swift concurrency's global executor, on request
// (`OperationsRuntime.installAsGlobalExecutor()`): every job the runtime would give its default
// (cooperative) pool becomes a core task of the core queue of its task's priority's class (one
// default-width queue per class, as Dispatch keeps a root queue per priority: a job of a higher
// class never waits behind lower-class jobs for a slot). A task that calls into a queue used as
// a task executor and awaits the answer then hands over between our workers only: no sleeping
// Dispatch thread to wake on the way back (issue 36, item 2: that wake-up was most of a round
// trip's 4–13 µs).
//
// The mechanism is the runtime's hook for the global executor's enqueue
// (`swift_task_enqueueGlobal_hook`, which `swift_task_enqueueGlobal` calls instead of its own
// implementation when set, as SwiftNIO's opt-in uses it). Jobs run as the global executor's
// (`runSynchronously(on:)` with Swift's `globalConcurrentExecutor`), so a task that calls a
// nonisolated async function does not hop: the runtime sees it already on the executor it
// wants. Each job is submitted as a plain function, so a new task's first child draws another
// worker at once (the LIFO slot that keeps an executor's job on its worker does not apply). `Task.sleep`'s timers stay the runtime's; the task they wake comes through the hook.
// The main actor's executor is not touched.
import Glibc
import OperationsCore
import Synchronization

extension OperationsRuntime {
    /// Makes the runtime's workers Swift concurrency's global executor, for the rest of the
    /// process: tasks that no actor or task executor claims (`Task { }`, `Task.detached`, child
    /// tasks, `async let`, nonisolated async functions) run their steps on the workers of their
    /// priority's class (see `QualityOfService`'s mapping: `.medium` runs at `.default`), each
    /// class on a queue of default width of its own, instead of on Swift's cooperative pool.
    /// Returns `true` once installed (also when it already was); `false`, changing nothing, when
    /// the Swift runtime offers no hook for it or another library (SwiftNIO's event loops, say)
    /// installed its own global executor first.
    ///
    /// Why: a task that awaits work on an `OperationQueue` used as a task executor hands over
    /// twice per call; with both pools ours, neither hand-over waits for a sleeping thread of
    /// the other's to wake. The workers' nice values, placement, blocked-worker monitor (a job
    /// that blocks its thread draws a spare worker, where the cooperative pool would starve),
    /// counters and trace then cover those tasks too.
    ///
    /// Call it early, before tasks start: jobs already handed to the cooperative pool still run
    /// there. It cannot be undone. `OperationQueue.current` stays `nil` in those tasks, as on the
    /// cooperative pool. Not part of Foundation's API.
    @discardableResult
    public static func installAsGlobalExecutor() -> Bool {
        GlobalExecutor.install()
    }

    /// Whether ``installAsGlobalExecutor()`` made the workers Swift's global executor. Stays
    /// `true` once set: a library that overwrites the runtime's hook afterwards is not seen.
    public static var isGlobalExecutor: Bool { GlobalExecutor.installed.load(ordering: .acquiring) }
}

/// The hook's type in the Swift runtime: the job and the runtime's own enqueue, Swift calling
/// convention without a context (`SWIFT_CC(swift) void (*)(Job *, void (*)(Job *))`).
typealias EnqueueGlobalOriginal = @convention(thin) (UnownedJob) -> Void
typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, EnqueueGlobalOriginal) -> Void

/// The global executor's queues and its installation.
enum GlobalExecutor {
    /// Set once the hook is installed.
    static let installed = Atomic<Bool>(false)

    /// The queues the jobs go to, one per class (`ClassQueues`). Made once, never freed.
    static let queues = ClassQueues("Swift concurrency (global executor)")

    /// The hook: every job to `enqueue`.
    static let hook: EnqueueGlobalHook = { job, _ in GlobalExecutor.enqueue(job) }

    /// Installs the hook, unless the runtime has none or someone else's is installed. Without a
    /// lock: every call stores the same function.
    static func install() -> Bool {
        if installed.load(ordering: .acquiring) { return true }
        // RTLD_DEFAULT (the global scope: the concurrency runtime the process loaded).
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") else {
            return false
        }
        let slot = symbol.assumingMemoryBound(to: Optional<EnqueueGlobalHook>.self)
        let ours = unsafeBitCast(hook, to: UnsafeRawPointer.self)
        // Another library's global executor stays: replacing it would move its jobs to us.
        if let current = slot.pointee, unsafeBitCast(current, to: UnsafeRawPointer.self) != ours { return false }
        _ = queues // made before the first job can come
        // A plain pointer-sized store, which the runtime reads without synchronisation, as every
        // installer of this hook does: an enqueue on another thread sees the old or the new one.
        slot.pointee = hook
        // releasing: whoever reads true sees the queues made.
        installed.store(true, ordering: .releasing)
        return true
    }

    /// A job for the global executor: a core task of its priority's class's queue.
    static func enqueue(_ job: UnownedJob) {
        let qos = QualityOfService.coreQoS(forJobPriority: job.priority.rawValue)
        let queue = queues.queue(for: qos == OP_QOS_INHERIT ? OP_QOS_DEFAULT : op_qos_t(UInt32(qos)))
        // Submitted as a plain function, not as an executor's job: a job that a running job pushes
        // stays on its worker until a second one waits (the queues' LIFO slot for a task's
        // chain), and here that held a new task's first child until its parent suspended (a
        // parent that spun waiting for it never finished; review). As the cooperative pool does,
        // the first one draws another worker now, where the width allows.
        let rc = op_queue_submit_f(queue, runGlobalJob, unsafeBitCast(job, to: UnsafeMutableRawPointer.self))
        if rc != 0 { fatalError("Operations: a job of the global executor could not be enqueued (core error \(rc))") }
    }
}

/// The core task body of a global executor's job; its context is the job. Run as Swift's
/// global executor runs it: a task that then calls a nonisolated async function finds itself
/// on the executor that function wants, and does not hop (with a task executor of our own here,
/// each such call and return went through the hook: two queue trips per call; review).
private let runGlobalJob: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    let job = unsafeBitCast(context.unsafelyUnwrapped, to: UnownedJob.self)
    job.runSynchronously(on: globalConcurrentExecutor.asUnownedTaskExecutor())
}
