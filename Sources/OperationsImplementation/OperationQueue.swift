// OperationQueue.swift — a queue of operations on the core: width, suspension, QoS, priorities,
// the list of operations, cancel-all, barriers, waits, and `current`.
import Dispatch
import Glibc
import OperationsCore
import Synchronization

/// Runs operations on the runtime's workers, in priority order among those that are ready.
/// The add → run → finish path takes no lock: adding claims the operation atomically, registers
/// it (one compare-and-swap) and submits its core task.
open class OperationQueue: @unchecked Sendable {
    /// What a new queue reports as `maxConcurrentOperationCount`: the runtime chooses (one
    /// operation per worker of the queue's QoS class, i.e. per CPU).
    public static let defaultMaxConcurrentOperationCount: Int = -1

    let core: OpaquePointer
    private var lockedName: String?
    private var lockedUnderlyingQueue: DispatchQueue?
    /// Set while `underlyingQueue` is non-nil, so workers check it with one load.
    let hasUnderlyingQueue = Atomic<Bool>(false)
    /// True only for `OperationQueue.main`.
    let isMainQueue: Bool
    /// Runs the jobs of the `TaskOperation`s this queue started, in their width slots
    /// (OperationQueue+Executor.swift).
    let bodyExecutor = OperationBodyExecutor()
    /// Set once the queue was handed out as an actor's serial executor; its width then stays 1.
    let servesAsSerialExecutor = Atomic<Bool>(false)
    /// The queue's `progress`, made on first use; guarded by the queue's stripe of
    /// `StripedLock.shared` (OperationQueue+Progress.swift).
    var lockedProgress: QueueProgress?
    /// Set once the `totalUnitCount` of the queue's progress was set: from then on, operations
    /// that finish by the end of their `main()` count toward it (OperationQueue+Progress.swift).
    let reportsProgress = Atomic<Bool>(false)
    /// The queue's `foundationQueue` while something holds it; guarded by the queue's stripe
    /// (OperationQueue+Foundation.swift).
    var lockedFoundationQueue = WeakFoundationQueue()

    /// A queue of default width, not suspended, at `.default` QoS.
    public init() {
        guard let core = op_queue_create(nil, OP_QOS_DEFAULT, OP_WIDTH_DEFAULT) else {
            fatalError("OperationQueue.init: the core could not create a queue (out of memory)")
        }
        self.core = core
        isMainQueue = false
        attachToCore()
        // The core's reports, and every tool reading them, name the queue as `name` does.
        op_queue_set_label(core, defaultName)
    }

    /// The main queue: serial, userInteractive, its operations run on the main thread through
    /// Dispatch's main queue (so `dispatchMain()` or a run loop on the main thread drives it).
    private init(mainQueue: ()) {
        guard let core = op_queue_create("NSOperationQueue Main Queue", OP_QOS_USER_INTERACTIVE, 1) else {
            fatalError("OperationQueue.main: the core could not create a queue (out of memory)")
        }
        self.core = core
        isMainQueue = true
        lockedName = "NSOperationQueue Main Queue"
        lockedUnderlyingQueue = DispatchQueue.main
        hasUnderlyingQueue.store(true, ordering: .releasing)
        attachToCore()
    }

    private func attachToCore() {
        // While the queue holds unfinished operations, the core keeps this object alive (Q11).
        op_queue_set_context(core, Unmanaged.passUnretained(self).toOpaque(), queueContextRetain, queueContextRelease)
        // The registry lists operations and drops the queue's reference on each once finished.
        op_queue_set_tracking(core, releaseQueuedOperation)
    }

    deinit {
        if reportsProgress.load(ordering: .relaxed) { OperationQueue.queuesReportingProgress.subtract(1, ordering: .relaxed) }
        op_queue_release(core)
    }

    private static let mainQueue = OperationQueue(mainQueue: ())

    /// The queue whose operations run on the main thread (serial, `.userInteractive`).
    open class var main: OperationQueue { mainQueue }

    /// The dispatch queue this queue's operations run on, or nil for the runtime's workers
    /// (`OperationQueue.main` reports `DispatchQueue.main`). Settable only while the queue holds
    /// no operations; setting it otherwise traps, as Foundation does. The width still applies.
    open var underlyingQueue: DispatchQueue? {
        get { StripedLock.shared.withLock(for: self) { lockedUnderlyingQueue } }
        set {
            if isMainQueue {
                operationMisuse("underlyingQueue of \(self) cannot be changed")
            }
            if op_queue_unfinished(core) != 0 {
                operationMisuse("underlyingQueue of \(self) set while it holds operations; set it before adding any")
            }
            let refused = StripedLock.shared.withLock(for: self) { () -> Bool in
                // Under the lock: asUnownedSerialExecutor() checks for an underlying queue under it.
                if newValue != nil && servesAsSerialExecutor.load(ordering: .relaxed) { return true }
                lockedUnderlyingQueue = newValue
                hasUnderlyingQueue.store(newValue != nil, ordering: .releasing)
                return false
            }
            if refused {
                operationMisuse("underlyingQueue of \(self) set, but the queue is the serial executor of an actor; its jobs must stay on the queue's workers")
            }
        }
    }

    /// Adds an operation; it may start at once. Adding one that is already in a queue,
    /// executing or finished traps with a message naming it.
    open func addOperation(_ operation: Operation) {
        operation.claimForQueue(self)
        promoteDependencies(of: operation)
        if op_trace_is_recording() { operation.nameForTrace() }
        let rc = op_queue_submit(core, operation.task)
        if rc != 0 { operationMisuse("\(operation) could not be added to \(self) (core error \(rc))") }
    }

    /// No priority inversion: the unfinished dependencies of an operation added here (and
    /// theirs) run at least at its QoS until they finished.
    func promoteDependencies(of operation: Operation) {
        // The core's count, not `dependencies` (a lock and a copy of the list on every add):
        // only unfinished dependencies can be raised, and before the add every one is in the
        // core's graph.
        guard op_runtime_qos_promotion(), op_task_unfinished_dependencies(operation.task) != 0 else { return }
        let qos = operation.requestedCoreQoS(on: core)
        // Dependencies on this queue without a QoS of their own run at its class: when that is
        // at least `qos` they need no raise (the core would find the same, behind a CAS).
        operation.promoteDependencies(to: qos, addedTo: op_queue_qos(core).rawValue >= qos.rawValue ? core : nil)
    }

    /// Adds a closure as a `BlockOperation` that reports the queue's `qualityOfService` (Q10).
    open func addOperation(_ block: @escaping @Sendable () -> Void) {
        addOperationReportingQueueQoS(BlockOperation(block: block))
    }

    /// Adds an operation made for a closure, giving it the queue's QoS as its own (Q10).
    func addOperationReportingQueueQoS(_ operation: Operation) {
        let qos = op_queue_qos(core)
        if qos != OP_QOS_DEFAULT { _ = op_task_set_qos(operation.task, Int32(qos.rawValue)) }
        addOperation(operation)
    }

    /// Adds all `operations` before any of them starts; with `waitUntilFinished`, returns when
    /// all of them finished. The same operation twice traps.
    ///
    /// Available from async code, as in Foundation, so that a non-waiting call compiles there
    /// without `await`; to wait from async code, `await addOperationsAndWait(_:)` suspends the
    /// task instead of blocking its thread.
    open func addOperations(_ operations: [Operation], waitUntilFinished wait: Bool) {
        submitAll(operations)
        if wait {
            // Every operation's waitUntilFinished(), as Foundation calls it (a subclass may
            // override it); one whose finish is over returns without sleeping.
            for operation in operations { operation.waitUntilFinished() }
        }
    }

    /// Adds all `operations` as the blocking form does, before any of them starts.
    func submitAll(_ operations: [Operation]) {
        let tracing = op_trace_is_recording()
        for (index, operation) in operations.enumerated() {
            // An operation listed twice traps at its second claim, naming the repeat (a set of
            // the batch cost W3 tens of nanoseconds per operation).
            operation.claimForQueue(self, batch: operations, index: index)
            promoteDependencies(of: operation)
            if tracing { operation.nameForTrace() }
        }
        let tasks: [OpaquePointer?] = operations.map { $0.task }
        let rc = tasks.withUnsafeBufferPointer { op_queue_submit_batch(core, $0.baseAddress, $0.count) }
        if rc != 0 { operationMisuse("addOperations(_:waitUntilFinished:) on \(self) failed (core error \(rc))") }
    }

    /// How many operations may execute at once: `defaultMaxConcurrentOperationCount` (-1, which
    /// runs as many at once as ``OperationsRuntime/Topology/defaultWidth``: the CPUs, or the
    /// container's CPU limit when lower), or 0 or more (1 makes a serial queue, 0 starts nothing
    /// until raised). Other negative values
    /// trap, and so does a width other than 1 once the queue is an actor's serial executor.
    open var maxConcurrentOperationCount: Int {
        get { Int(op_queue_width(core)) }
        set {
            if newValue < -1 {
                operationMisuse("maxConcurrentOperationCount of \(self) set to \(newValue); use -1 (default) or a count >= 0")
            }
            // Under the queue's lock: asUnownedSerialExecutor() checks the width under it. The
            // message outside it (a queue's description takes the lock).
            let refused = StripedLock.shared.withLock(for: self) { () -> Bool in
                if newValue != 1 && servesAsSerialExecutor.load(ordering: .relaxed) { return true }
                op_queue_set_width(core, Int32(clamping: newValue))
                return false
            }
            if refused {
                operationMisuse("maxConcurrentOperationCount of \(self) set to \(newValue), but the queue is the serial executor of an actor; it must stay 1")
            }
        }
    }

    /// While true no operation starts; running ones go on.
    open var isSuspended: Bool {
        get { op_queue_is_suspended(core) }
        set { op_queue_set_suspended(core, newValue) }
    }

    /// Free text for diagnostics. Never nil: a new queue is named after itself,
    /// `NSOperationQueue 0x…` with its address, as Foundation's (Q13); `OperationQueue.main` is
    /// `NSOperationQueue Main Queue`. Setting nil restores the default. The core's queue carries
    /// the same name (its label), so `diagnosticReport` and
    /// `OperationsRuntime.diagnosticReport()` show it.
    open var name: String? {
        get { StripedLock.shared.withLock(for: self) { lockedName } ?? defaultName }
        set {
            StripedLock.shared.withLock(for: self) {
                lockedName = newValue
                // Under the stripe: concurrent renames leave the core's label and `name` agreeing.
                // ENOMEM keeps the old label (the report only).
                _ = op_queue_set_label(core, newValue ?? defaultName)
            }
        }
    }

    /// The name a queue has until one is set.
    private var defaultName: String { "NSOperationQueue \(Unmanaged.passUnretained(self).toOpaque())" }

    /// Type and name, e.g. `OperationQueue "downloads"`; misuse messages name queues with it.
    /// Subclasses may override it, as NSObject's.
    open var description: String {
        var text = String(describing: type(of: self))
        if let name { text += " \"\(name)\"" }
        return text
    }

    /// An object that represents the total progress of the operations executing in the queue.
    ///
    /// As Apple documents it: the queue does not report progress until the progress's
    /// `totalUnitCount` is set. From then on, each operation of the queue that finishes by the
    /// end of its `main()` adds one unit to `completedUnitCount`, counted before the operation
    /// is finished, so once a wait for the operations returns they are counted. Operations
    /// that override `start()` without calling `super.start()`, cancelled operations (their
    /// `main()` never runs) and barrier blocks count nothing; a ``TaskOperation`` counts when its
    /// body returns or throws. Setting `totalUnitCount` from a barrier block
    /// (``addBarrierBlock(_:)``) avoids counting races and progress that moves backwards.
    ///
    /// Counting is thread-safe: the queue's workers add units under a lock, which the
    /// progress's `totalUnitCount` and `completedUnitCount` accessors take too (Foundation's
    /// `Progress` on Linux has no lock of its own). A subclass may override this property;
    /// the queue then counts into the progress it made itself, which the override can return
    /// or pass to `super`. Unlike Apple's, the queue does not conform to `ProgressReporting`,
    /// which on Linux requires `NSObjectProtocol`.
    open var progress: Progress { madeProgress }

    /// The QoS of operations that have none of their own. A new queue reports `.default`.
    open var qualityOfService: QualityOfService {
        get { QualityOfService(coreClass: op_queue_qos(core)) }
        set {
            // Under the queue's lock, with the body executor's queue made under it too.
            StripedLock.shared.withLock(for: self) {
                op_queue_set_qos(core, newValue.coreClass)
                bodyExecutor.setQoS(newValue.coreClass)
            }
        }
    }

    /// The operations added and not yet finished, in the order they were added (barrier blocks
    /// are not listed). A snapshot.
    ///
    /// Reading it right after an operation signalled from its body is a race on any runtime.
    /// A reader woken by that signal often runs on the CPU of the worker that sent it, and the
    /// kernel then preempts the worker between its body's last statement and its finish; our
    /// workers are pinned and cannot move away meanwhile. So when the snapshot holds an
    /// executing operation, the reader first gives its CPU away once (`sched_yield`), letting
    /// such a worker reach its finish (issue 13, item 10).
    open var operations: [Operation] {
        let listed = listOperations()
        if listed.contains(where: { $0.state.load(ordering: .acquiring) & Operation.State.executing != 0 }) {
            sched_yield()
        }
        return listed.filter { !$0.isFinished }
    }

    /// The registry's listing: every operation added and not yet released, finished or not.
    private func listOperations() -> [Operation] {
        final class Collector { var operations: [Operation] = [] }
        let collector = Collector()
        withExtendedLifetime(collector) {
            op_queue_for_each(core, { task, argument in
                guard let task, let argument, let context = op_task_context(task) else { return }
                let collector = Unmanaged<Collector>.fromOpaque(argument).takeUnretainedValue()
                // The registry keeps the operation alive while it can be listed.
                collector.operations.append(Unmanaged<Operation>.fromOpaque(context).takeUnretainedValue())
            }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.operations
    }

    /// How many operations `operations` would list now. A snapshot.
    open var operationCount: Int { operations.count }

    /// Cancels every operation in the queue (calling each one's `cancel()`), and barrier blocks
    /// that have not run (their closures then never run). Finished ones are not affected. What
    /// the queue's `foundationQueue` holds is cancelled too: its closures not yet run are
    /// dropped, its Foundation operations cancelled (they end finished).
    open func cancelAllOperations() {
        for operation in operations { operation.cancel() }
        // Barriers, and anything added since the listing. Every queue of ours tracks its tasks
        // (the core's only refusal is a queue that does not), so a refusal is a broken queue.
        let rc = op_queue_cancel_all(core)
        if rc != 0 { operationMisuse("cancelAllOperations() on \(self) failed (core error \(rc))") }
        let bridge = StripedLock.shared.withLock(for: self) { lockedFoundationQueue.object }
        (bridge as? FoundationQueueBridge)?.cancelForwarded()
    }

    /// Runs `barrier` after every operation added before it finished, and holds back every
    /// operation added after it until it has run.
    open func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        let operation = BlockOperation(block: barrier)
        operation.withExtras {
            $0.name = "barrier"
            $0.isBarrier = true
        }
        operation.claimForQueue(self)
        let rc = op_queue_submit_barrier(core, operation.task)
        if rc != 0 { operationMisuse("addBarrierBlock(_:) on \(self) failed (core error \(rc))") }
    }

    /// Blocks until the queue holds no unfinished operation; operations added meanwhile extend
    /// the wait. Calling it from one of the queue's own operations traps.
    ///
    /// Unavailable from async code, as in Foundation: there
    /// `await waitUntilAllOperationsAreFinished()` suspends instead of blocking a thread.
    @available(*, noasync, message: "use await waitUntilAllOperationsAreFinished(), which suspends instead of blocking a thread; in top-level code (main.swift) after an await, wrap the wait in a function or use the async form")
    open func waitUntilAllOperationsAreFinished() {
        if isMainQueue && isMainThread() {
            operationMisuse("waitUntilAllOperationsAreFinished() called on \(self) from the main thread; its operations run on the main thread, so it would wait forever")
        }
        if let current = op_queue_current(), current == core || bodyExecutor.isJobQueue(current) {
            operationMisuse("waitUntilAllOperationsAreFinished() called on \(self) from one of its own operations; it would wait forever")
        }
        // Wait in slices; when nothing runs and every operation left waits for a dependency,
        // look for a cycle (D4) and report it instead of hanging silently.
        // The slices double as the operation's wait's do (a look lists the queue).
        var slice = Operation.cycleCheckIntervalNs
        while op_queue_wait(core, slice) == ETIMEDOUT {
            if isSuspended { continue }
            if let cycle = dependencyCycleHoldingEveryOperation() {
                operationMisuse("waitUntilAllOperationsAreFinished() on \(self) would wait forever: dependency cycle \(Operation.describeCycle(cycle))")
            }
            slice = min(slice * 2, Operation.cycleCheckLongestIntervalNs)
        }
    }

    /// A dependency cycle, when nothing runs and every operation left waits for a dependency
    /// and one of them lies on a cycle; nil otherwise.
    func dependencyCycleHoldingEveryOperation() -> [Operation]? {
        let left = operations
        // Core references around the reads, so ThreadSanitizer sees the task stay alive (it
        // does not see Swift's reference counts as synchronising).
        for operation in left { op_task_retain(operation.task) }
        let stuck = !left.isEmpty && left.allSatisfy { !$0.isExecuting && !$0.isReady }
        for operation in left { op_task_release(operation.task) }
        guard stuck else { return nil }
        // One walk from all of them: each operation is explored once.
        return Operation.dependencyCycle(reachableFrom: left).cycle
    }

    /// The queue whose worker runs the caller (a core task body), if it has an underlying
    /// dispatch queue; nil otherwise. The queue object lives while it holds the running
    /// operation, so it is looked at without a retain.
    static func runningQueueWithUnderlyingQueue() -> Unmanaged<OperationQueue>? {
        guard let queue = op_queue_current(), let context = op_queue_context(queue) else { return nil }
        let owner = Unmanaged<OperationQueue>.fromOpaque(context)
        return owner._withUnsafeGuaranteedRef { $0.hasUnderlyingQueue.load(ordering: .acquiring) } ? owner : nil
    }

    /// The queue running the current operation; `OperationQueue.main` on the main thread; nil
    /// elsewhere.
    open class var current: OperationQueue? {
        if let queue = op_queue_current(), let context = op_queue_context(queue) {
            return Unmanaged<OperationQueue>.fromOpaque(context).takeUnretainedValue()
        }
        return isMainThread() ? OperationQueue.main : nil
    }
}

/// The registry's release of a finished operation: the queue's reference from addOperation.
private let releaseQueuedOperation: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    Unmanaged<Operation>.fromOpaque(context).release()
}

let queueContextRetain: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    _ = Unmanaged<OperationQueue>.fromOpaque(context).retain()
}

let queueContextRelease: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    Unmanaged<OperationQueue>.fromOpaque(context).release()
}

extension OperationQueue: Hashable {
    /// Identity, as NSObject's default.
    public static func == (lhs: OperationQueue, rhs: OperationQueue) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension OperationQueue: CustomStringConvertible {}

/// Whether the caller runs on the process's main thread (its thread id is the process id).
func isMainThread() -> Bool { getpid() == op_current_thread_id() }
