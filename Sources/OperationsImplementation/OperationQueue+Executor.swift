// OperationQueue+Executor.swift — queues in Swift concurrency: an OperationQueue is a
// `TaskExecutor` (`Task(executorPreference: queue)`, `withTaskExecutorPreference(queue)`), and a
// queue of width 1 is a `SerialExecutor` an actor can run on. Each job is a core task of the
// queue (`op_queue_submit_job`: untracked, so never listed, cancelled or fenced by barriers):
// it runs on the queue's workers, at the QoS of its task's priority (`.medium` → the queue's;
// see QualityOfService+TaskPriority.swift), counted against the width, held while the queue is
// suspended, with `OperationQueue.current` being the queue.
//
// The jobs of a `TaskOperation`'s body go elsewhere: the operation holds one of the queue's
// slots while it runs, so its jobs must not wait for another one (on a serial queue they would
// wait forever), nor stop while the queue is suspended (a started operation runs on). They go
// to the queue's `OperationBodyExecutor`, whose core queue has the same QoS and the workers'
// width, is never suspended, and has the operation queue as its context.
import Dispatch
import OperationsCore
import Synchronization

extension OperationQueue: TaskExecutor, SerialExecutor {
    /// Runs `job` as the queue's work: a core task on the queue's workers, at the QoS that its
    /// priority maps to (`.medium` and unspecified: the queue's), counted against
    /// `maxConcurrentOperationCount`, held while the queue is suspended. Jobs are not
    /// operations: `operations`, `cancelAllOperations()` and barriers do not see them, but
    /// `waitUntilAllOperationsAreFinished()` waits for those already enqueued. A queue with an
    /// `underlyingQueue` (`OperationQueue.main`) runs them on that dispatch queue.
    public func enqueue(_ job: consuming ExecutorJob) {
        submitJob(job, to: core, running: runQueueJob)
    }

    /// The queue as an actor's executor: `nonisolated var unownedExecutor:
    /// UnownedSerialExecutor { queue.asUnownedSerialExecutor() }`. Only a queue of width 1 is
    /// serial: on any other this traps with a message naming the queue, and once handed out
    /// the width cannot change any more (setting another traps). A queue with an
    /// `underlyingQueue` (other than `OperationQueue.main`) traps too: its jobs run on that
    /// dispatch queue, which may be concurrent, and an underlying queue cannot be set once
    /// handed out.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        // relaxed: set once under the lock below; a stale false only takes the slow path.
        if servesAsSerialExecutor.load(ordering: .relaxed) { return UnownedSerialExecutor(ordinary: self) }
        // The check and the mark under the queue's lock (the width setter checks the mark
        // under it); the message outside it (a queue's description takes the lock).
        let (width, underlying) = StripedLock.shared.withLock(for: self) { () -> (Int32, Bool) in
            let width = op_queue_width(core)
            let underlying = !isMainQueue && hasUnderlyingQueue.load(ordering: .acquiring)
            if width == 1 && !underlying { servesAsSerialExecutor.store(true, ordering: .relaxed) }
            return (width, underlying)
        }
        if underlying {
            operationMisuse("\(self) used as the serial executor of an actor, but it has an underlyingQueue, which may run its jobs concurrently")
        }
        if width != 1 {
            operationMisuse("\(self) used as the serial executor of an actor, but its maxConcurrentOperationCount is \(width); only a queue of width 1 can run an actor")
        }
        return UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless the caller runs as this queue's work on a serial queue (a job or an
    /// operation of the queue; the main thread for `OperationQueue.main`). The runtime calls it
    /// for `assumeIsolated` and `preconditionIsolated` of an actor that runs on the queue.
    public func checkIsolated() {
        let width = op_queue_width(core)
        let onQueue = op_queue_current() == core || (isMainQueue && isMainThread())
        if !onQueue || width != 1 {
            operationMisuse("code expected to be isolated to \(self) runs elsewhere (\(onQueue ? "the queue is not serial: width \(width)" : "not on the queue"))")
        }
    }

    /// Runs a job of this queue's on the calling worker (or on the underlying dispatch queue).
    func runJob(_ job: UnownedJob) {
        if hasUnderlyingQueue.load(ordering: .acquiring) {
            forwardToUnderlyingQueue(job, running: core, bodyJob: false)
            return
        }
        runJobHere(job, bodyJob: false)
    }

    /// Runs a job of one of this queue's `TaskOperation` bodies on the calling worker.
    func runBodyJob(_ job: UnownedJob) {
        if hasUnderlyingQueue.load(ordering: .acquiring), let jobCore = bodyExecutor.jobCore {
            forwardToUnderlyingQueue(job, running: jobCore, bodyJob: true)
            return
        }
        runJobHere(job, bodyJob: true)
    }

    /// Runs the job on the calling thread: isolated to the queue when it is an actor's
    /// executor, with the task executor it came through.
    private func runJobHere(_ job: UnownedJob, bodyJob: Bool) {
        if bodyJob {
            job.runSynchronously(on: UnownedTaskExecutor(ordinary: bodyExecutor))
        } else if servesAsSerialExecutor.load(ordering: .relaxed) {
            // relaxed: set before the executor was handed out, so before any actor job came.
            job.runSynchronously(isolatedTo: UnownedSerialExecutor(ordinary: self),
                                 taskExecutor: UnownedTaskExecutor(ordinary: self))
        } else {
            job.runSynchronously(on: UnownedTaskExecutor(ordinary: self))
        }
    }

    /// Hands the job to the underlying dispatch queue, with `current` set to this queue there.
    /// The width slot is not held meanwhile (a job is not an operation).
    private func forwardToUnderlyingQueue(_ job: UnownedJob, running coreQueue: OpaquePointer, bodyJob: Bool) {
        guard let target = underlyingQueue else { return runJobHere(job, bodyJob: bodyJob) }
        let address = UInt(bitPattern: coreQueue) // the queue object keeps it alive meanwhile
        target.async { [self] in
            let previous = op_queue_swap_current(OpaquePointer(bitPattern: address))
            runJobHere(job, bodyJob: bodyJob)
            op_queue_swap_current(previous)
        }
    }

    /// The operation queue whose core queue (or body executor's queue) runs the calling worker's
    /// task. Only from a job's body: the core holds the queue object while the job is unfinished.
    static func runningJobQueue() -> Unmanaged<OperationQueue> {
        guard let queue = op_queue_current(), let context = op_queue_context(queue) else {
            fatalError("Operations: a job ran outside its queue")
        }
        return Unmanaged<OperationQueue>.fromOpaque(context)
    }
}

/// Submits `job` to a core queue as an untracked task whose body is `run` and whose context is
/// the job, at the QoS its priority maps to.
private func submitJob(_ job: consuming ExecutorJob, to coreQueue: OpaquePointer,
                       running run: @convention(c) (UnsafeMutableRawPointer?) -> Void) {
    let qos = QualityOfService.coreQoS(forJobPriority: job.priority.rawValue)
    let context = unsafeBitCast(UnownedJob(job), to: UnsafeMutableRawPointer.self)
    let rc = op_queue_submit_job(coreQueue, run, context, qos)
    if rc != 0 {
        let label = op_queue_label(coreQueue).map { String(cString: $0) } ?? "an unnamed queue"
        fatalError("Operations: a job could not be enqueued on \(label) (core error \(rc))")
    }
}

/// The core task body of a job enqueued on an OperationQueue; its context is the job.
let runQueueJob: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    let job = unsafeBitCast(context.unsafelyUnwrapped, to: UnownedJob.self)
    OperationQueue.runningJobQueue()._withUnsafeGuaranteedRef { $0.runJob(job) }
}

/// The core task body of a job of a TaskOperation's body; its context is the job.
let runOperationBodyJob: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    let job = unsafeBitCast(context.unsafelyUnwrapped, to: UnownedJob.self)
    OperationQueue.runningJobQueue()._withUnsafeGuaranteedRef { $0.runBodyJob(job) }
}

/// The task executor of the `TaskOperation` bodies that one queue started: their jobs run on
/// the queue's workers, in the slots the operations hold (see the top of this file).
final class OperationBodyExecutor: TaskExecutor, @unchecked Sendable {
    /// The core queue the jobs go to (its address; 0 until the first TaskOperation starts).
    private let jobCoreWord = Atomic<UInt>(0)

    /// The core queue the jobs go to, once made.
    var jobCore: OpaquePointer? {
        // acquiring: pairs with the releasing store in `prepare`, so the queue is set up.
        OpaquePointer(bitPattern: jobCoreWord.load(ordering: .acquiring))
    }

    /// Whether `coreQueue` is the one the jobs go to.
    func isJobQueue(_ coreQueue: OpaquePointer) -> Bool { coreQueue == jobCore }

    /// Makes the core queue on first use: the queue's QoS, as wide as the class's workers,
    /// never suspended, untracked, with `queue` as its context.
    func prepare(for queue: OperationQueue) {
        if jobCore != nil { return }
        let label = "\(queue.description) TaskOperation bodies" // takes the queue's lock
        // Under the queue's lock: a QoS change cannot fall between reading the QoS and
        // publishing the core queue, and two first TaskOperations make one core queue.
        StripedLock.shared.withLock(for: queue) {
            if jobCore != nil { return }
            guard let made = op_queue_create(label, op_queue_qos(queue.core), OP_WIDTH_DEFAULT) else {
                fatalError("Operations: \(label): the core could not create a queue (out of memory)")
            }
            op_queue_set_context(made, Unmanaged.passUnretained(queue).toOpaque(), queueContextRetain, queueContextRelease)
            OperationQueue.copyPlacement(from: queue.core, to: made) // the bodies follow the queue's CPUs
            // releasing: whoever reads the address sees the queue set up.
            jobCoreWord.store(UInt(bitPattern: made), ordering: .releasing)
        }
    }

    /// Follows the operation queue's QoS. Caller holds the queue's lock.
    func setQoS(_ qos: op_qos_t) {
        if let jobCore { op_queue_set_qos(jobCore, qos) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        guard let jobCore else { fatalError("Operations: a TaskOperation job came before its queue was prepared") }
        submitJob(job, to: jobCore, running: runOperationBodyJob)
    }

    deinit {
        if let jobCore { op_queue_release(jobCore) }
    }
}
