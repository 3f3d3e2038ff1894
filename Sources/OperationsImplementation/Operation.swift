// Operation.swift — the abstract operation: its state as users see it, start/main/cancel/wait,
// and how a queue runs it through its core task. Dependencies, observation and the KVO
// compatibility path live in the Operation+… files.
import Glibc
import OperationsCore
import Synchronization

/// An abstract unit of work, with Foundation's `Operation` API and documented semantics.
///
/// Subclass it and override `main()` for synchronous work, or `start()` together with
/// `isAsynchronous`, `isExecuting` and `isFinished` (announcing changes with
/// `willChangeValue(forKey:)` / `didChangeValue(forKey:)`) for asynchronous work.
open class Operation: @unchecked Sendable {
    /// Relative order of the ready operations of one queue.
    public enum QueuePriority: Int, Sendable {
        case veryLow = -8
        case low = -4
        case normal = 0
        case high = 4
        case veryHigh = 8

        init(coreBand: op_priority_t) {
            switch coreBand {
            case OP_PRIORITY_VERY_LOW: self = .veryLow
            case OP_PRIORITY_LOW: self = .low
            case OP_PRIORITY_HIGH: self = .high
            case OP_PRIORITY_VERY_HIGH: self = .veryHigh
            default: self = .normal
            }
        }

        var coreBand: op_priority_t {
            switch self {
            case .veryLow: OP_PRIORITY_VERY_LOW
            case .low: OP_PRIORITY_LOW
            case .normal: OP_PRIORITY_NORMAL
            case .high: OP_PRIORITY_HIGH
            case .veryHigh: OP_PRIORITY_VERY_HIGH
            }
        }
    }

    /// State bits. Written with atomic or/and; read with acquiring loads. At most 16 of them:
    /// they live in the top bits of `stateWord` (`OperationStateBits`).
    struct State {
        static let executing: UInt32 = 1 << 0
        static let finished: UInt32 = 1 << 1
        static let cancelled: UInt32 = 1 << 2
        static let started: UInt32 = 1 << 3       // start() claimed it
        static let enqueued: UInt32 = 1 << 4      // added to a queue
        static let completed: UInt32 = 1 << 5     // finish handled (completion block, core task)
        static let queueStarting: UInt32 = 1 << 6 // its queue is calling start()
        static let hasCompletion: UInt32 = 1 << 7 // a completion block may be set
        static let hasObservers: UInt32 = 1 << 8  // typed observers registered
        static let readinessHeld: UInt32 = 1 << 9 // a hold is taken on the core task (custom isReady said no)
        static let hasThreadPriority: UInt32 = 1 << 10 // threadPriority was set (it is in extras)
        static let severalBlocks: UInt32 = 1 << 11     // a BlockOperation has blocks in extras
        static let hasDependents: UInt32 = 1 << 12     // operations wait for it (extras.dependents)
        static let lateDependencies: UInt32 = 1 << 13  // a dependency the core could not hold (D3)
        static let dependentsClosed: UInt32 = 1 << 14  // completed: no dependent or async waiter is added now
        static let hasFinishWaiters: UInt32 = 1 << 15  // async waits are registered (extras.finishWaiters)
    }

    /// The operation's only stored property: the `State` bits in the top 16 bits, and the
    /// address of the core task, or once there are extras, of the extras (which hold the task
    /// and carry one reference from here), or of a side-table slot holding the extras' address
    /// when it has high bits set (a tagged pointer). See `OperationStateBits`.
    let stateWord: Atomic<UInt>

    /// The core task that stands for this operation in queues and dependency graphs. Owned.
    /// It also keeps the operation's queue priority and QoS.
    @inline(__always)
    var task: OpaquePointer {
        // acquiring: pairs with the releasing exchange that points the word at the extras, so
        // their `task` is visible (on x86 this is a plain load).
        OperationStateBits.task(in: stateWord.load(ordering: .acquiring))
    }

    /// The operation's `State` bits.
    @inline(__always)
    var state: OperationStateBits { OperationStateBits(owner: self) }

    /// What few operations use, allocated on first use; nil before. The caller holds
    /// StripedLock.shared for self.
    var lockedExtras: OperationExtras? {
        lockedExtrasReference?.takeUnretainedValue()
    }

    /// `lockedExtras` without a reference of its own: the word's reference keeps them while
    /// the caller holds the lock (they are freed only by deinit).
    @inline(__always)
    var lockedExtrasReference: Unmanaged<OperationExtras>? {
        // relaxed: the extras are installed under the same lock, which orders them for us.
        OperationStateBits.extrasReference(in: stateWord.load(ordering: .relaxed))
    }

    /// Creates an operation. Reads no overridable property.
    public init() {
        var attributes = op_task_attr_t()
        op_task_attr_init(&attributes)
        // The queue calls the body even for a cancelled operation (start() moves it to
        // finished), and the operation, not the body's return, says when it is finished.
        attributes.flags = UInt32(OP_TASK_RUN_WHEN_CANCELLED) | UInt32(OP_TASK_MANUAL_COMPLETION)
            | UInt32(OP_TASK_BODY_APPLIES_THREAD_PRIORITY)
        // Empty until the task exists, so the task is created with its context (no
        // op_task_set_context call); nothing reads the word before init returns.
        self.stateWord = Atomic(0)
        guard let task = op_task_create(operationTaskBody, Unmanaged.passUnretained(self).toOpaque(), &attributes) else {
            fatalError("Operation.init: the core could not create a task (out of memory)")
        }
        // The task, or (an address with high bits set) extras holding it: OperationStateBits.
        // relaxed: the operation is published by whoever receives it from init.
        stateWord.store(OperationStateBits.initialPart(task: task), ordering: .relaxed)
    }

    /// Runs `body` on the extras under the operation's lock, creating them first.
    @discardableResult
    func withExtras<T>(_ body: (OperationExtras) throws -> T) rethrows -> T {
        try StripedLock.shared.withLock(for: self) {
            // Borrowed from the word's reference (no retain and release around the body).
            try (lockedExtrasReference ?? makeExtrasLocked())._withUnsafeGuaranteedRef { try body($0) }
        }
    }

    /// Creates the extras; the caller holds the operation's lock. Returns them borrowed from
    /// the word's reference, as `lockedExtrasReference` would.
    func makeExtrasLocked() -> Unmanaged<OperationExtras> {
        // The word's reference (the new object's own), dropped by deinit (with the side-table
        // slot, if any).
        let extras = Unmanaged.passRetained(OperationExtras(task: task))
        let part = OperationStateBits.extrasPart(extras)
        // Swap the reference part, keeping the state bits that other threads may change
        // meanwhile. relaxed: a first guess; the exchange checks it.
        var current = stateWord.load(ordering: .relaxed)
        while true {
            let desired = (current & ~OperationStateBits.lowMask) | part
            // releasing: whoever reads the task through the extras (acquiring) sees them filled.
            let (exchanged, original) = stateWord.compareExchange(
                expected: current, desired: desired, ordering: .releasing)
            if exchanged { break }
            current = original
        }
        return extras
    }

    /// Reads from the extras under the operation's lock; `empty` when there are none.
    func readExtras<T>(_ empty: T, _ body: (OperationExtras) -> T) -> T {
        StripedLock.shared.withLock(for: self) {
            guard let extras = lockedExtrasReference else { return empty }
            return extras._withUnsafeGuaranteedRef { body($0) }
        }
    }

    deinit {
        // acquiring: see the extras' fields if the word points at them.
        let word = stateWord.load(ordering: .acquiring)
        let task = OperationStateBits.task(in: word) // read before the extras may go
        if let extras = OperationStateBits.extrasReference(in: word) { release(extras) }
        OperationStateBits.releaseSlot(of: word)
        op_task_release(task)
    }

    /// Drops the word's reference on the extras (freeing them outside the lock: their
    /// closures may free other operations), the dependencies through ChainRelease's loop, so
    /// a long chain is not freed by recursion through deinits. Only from deinit.
    private func release(_ extras: Unmanaged<OperationExtras>) {
        func takeDependencies() -> DependencyList {
            extras._withUnsafeGuaranteedRef { extras in
                // acquiring: the last bump (made outside the lock) comes before the free, for
                // ThreadSanitizer (see OperationExtras.dependencyGeneration). A plain load on x86.
                _ = extras.dependencyGeneration.load(ordering: .acquiring)
                let list = extras.dependencies
                extras.dependencies = DependencyList() // `list` holds the only references
                return list
            }
        }
        // The last reference's release orders every writer of the extras before this deinit
        // (Swift's final decrement acquires). ThreadSanitizer does not see that ordering, so
        // under it the lock the writers held orders them instead; elsewhere the lock was 6–8 %
        // of W6's samples (its unlock).
        var dependencies = Operation.deinitTakesTheLock
            ? StripedLock.shared.withLock(forAddress: Unmanaged.passUnretained(self).toOpaque(), takeDependencies)
            : takeDependencies()
        if !dependencies.isEmpty { ChainRelease.release(&dependencies) }
        extras.release()
    }

    /// Whether the process runs under ThreadSanitizer (its runtime exports `__tsan_init`): the
    /// deinit then reads the extras under their lock (see `release(_:)`).
    static let deinitTakesTheLock: Bool = dlsym(nil, "__tsan_init") != nil

    // MARK: - State

    /// Whether `cancel()` was called. Safe from any thread.
    open var isCancelled: Bool { state.load(ordering: .acquiring) & State.cancelled != 0 }
    /// Whether the operation is running its task. Safe from any thread.
    open var isExecuting: Bool { state.load(ordering: .acquiring) & State.executing != 0 }
    /// Whether the operation finished (or was cancelled and then started). Safe from any thread.
    open var isFinished: Bool { state.load(ordering: .acquiring) & State.finished != 0 }
    /// Whether `start()` returns before the work is done. Default false.
    open var isAsynchronous: Bool { false }
    /// The old name of `isAsynchronous`.
    open var isConcurrent: Bool { isAsynchronous }
    /// Whether it may start now: every dependency finished (or it is cancelled). When the last
    /// dependency finishes, the operation re-reads this property (an override runs) and posts
    /// an "isReady" change to its observers.
    open var isReady: Bool {
        if state.load(ordering: .acquiring) & State.lateDependencies == 0 { return op_task_is_ready(task) }
        return isCancelled || (op_task_is_ready(task) && lateDependenciesFinished)
    }

    /// Free text for diagnostics (nil by default).
    open var name: String? {
        get { readExtras(nil) { $0.name } }
        set { withExtras { $0.name = newValue } }
    }

    /// The order among the ready operations of its queue. Default `.normal`. Changing it while
    /// the operation waits in a queue moves it to the back of its new level.
    open var queuePriority: QueuePriority {
        get { QueuePriority(coreBand: op_task_priority(task)) }
        set {
            willChangeValue(forKey: "queuePriority")
            op_task_set_priority(task, newValue.coreBand)
            didChangeValue(forKey: "queuePriority")
        }
    }

    /// The thread priority (0.0 … 1.0, default 0.5) the thread running `main()` gets, as a
    /// nice value relative to the operation's QoS class (see the core's nice mapping).
    open var threadPriority: Double {
        get {
            if state.load(ordering: .acquiring) & State.hasThreadPriority == 0 { return 0.5 }
            return readExtras(0.5) { $0.threadPriority }
        }
        set {
            let clamped = min(max(newValue, 0), 1)
            withExtras { $0.threadPriority = clamped }
            state.bitwiseOr(State.hasThreadPriority, ordering: .releasing)
            // The core runs a queued operation on a thread already at this nice value (no
            // renice that the process might not be allowed to undo).
            op_task_set_thread_priority(task, clamped.isNaN ? 0.5 : clamped)
        }
    }

    /// The operation's QoS; `.default` takes its queue's. It sets the nice value of the worker
    /// while the operation runs.
    open var qualityOfService: QualityOfService {
        get {
            let qos = op_task_qos(task)
            return qos == OP_QOS_INHERIT ? .default : QualityOfService(coreClass: op_qos_t(UInt32(qos)))
        }
        set { op_task_set_qos(task, newValue == .default ? OP_QOS_INHERIT : Int32(newValue.coreClass.rawValue)) }
    }

    /// Runs once after the operation finished (also when it was cancelled): once its finish is
    /// over — `isFinished` reads true, waits on it have returned, its dependents are released
    /// and its queue slot is free — on another thread, at the operation's QoS and the default
    /// thread priority, not as part of the operation's work. It may wait for the operation or
    /// its queue, add to or cancel its queue. Set to nil when it is taken to run.
    open var completionBlock: (@Sendable () -> Void)? {
        get { readExtras(nil) { $0.completionBlock } }
        set {
            willChangeValue(forKey: "completionBlock")
            withExtras { $0.completionBlock = newValue }
            if newValue != nil { state.bitwiseOr(State.hasCompletion, ordering: .releasing) }
            didChangeValue(forKey: "completionBlock")
        }
    }

    // MARK: - Running

    /// Starts the operation on the calling thread. The default implementation moves a cancelled
    /// operation straight to finished; otherwise it marks it executing, applies
    /// `threadPriority`, runs `main()`, restores the priority and marks it finished.
    ///
    /// Calling it on an operation that finished does nothing. Calling it on one that is not
    /// ready, that already started, or that is in a queue (the queue starts it) is a
    /// programmer error and traps with a message naming the operation.
    open func start() {
        // A plain BlockOperation that uses none of the rare features: the same effects with
        // fewer steps (Operation+PlainRun.swift); anything else, and every misuse, below.
        if isPlainBlockOperation && startPlainByHand() { return }
        guard beginExecuting() else { return }
        let threadPriority = self.threadPriority
        var previousNice = OP_NICE_UNCHANGED
        // Where the thread may renice there and back, around main() only; where it may not (no
        // CAP_SYS_NICE), the queue already runs the operation on a worker at that nice value
        // (OP_TASK_BODY_APPLIES_THREAD_PRIORITY) and this changes nothing.
        if threadPriority != 0.5 {
            previousNice = op_thread_priority_apply(effectiveCoreQoS, threadPriority)
        }
        // By hand (not on a worker), make waits on this operation from its own work fail loudly.
        let previousTask = op_task_swap_current(task)
        main()
        op_task_swap_current(previousTask)
        op_thread_priority_restore(previousNice)
        // Finished by the end of main(): one unit of the queue's progress, counted before the
        // operation is finished (a wait that returns then sees it counted).
        if state.load(ordering: .relaxed) & State.queueStarting != 0 {
            OperationQueue.countFinishedMainOnCurrentQueue(self)
        }
        markFinished()
    }

    /// What every `start()` does first: the misuse checks, the claim, and for a cancelled
    /// operation the move to finished. True when the operation is now executing and its work
    /// should run; false when there is nothing to run (it had finished, or was cancelled and
    /// is now finished).
    final func beginExecuting() -> Bool {
        let current = state.load(ordering: .acquiring)
        if current & State.finished != 0 { return false }
        if current & State.started != 0 {
            operationMisuse("start() called on \(self), which already started")
        }
        if current & State.enqueued != 0 && current & State.queueStarting == 0 {
            operationMisuse("start() called by hand on \(self), which is in an OperationQueue; the queue starts it")
        }
        // The queue checked readiness just before it called start().
        if current & (State.cancelled | State.queueStarting) == 0 && !isReady {
            operationMisuse("start() called on \(self), which is not ready (\(op_task_unfinished_dependencies(task)) unfinished dependencies)")
        }
        if state.bitwiseOr(State.started, ordering: .acquiringAndReleasing).oldValue & State.started != 0 {
            operationMisuse("start() called on \(self), which already started")
        }
        if isCancelled {
            markFinished()
            return false
        }
        willChangeValue(forKey: "isExecuting")
        state.bitwiseOr(State.executing, ordering: .releasing)
        didChangeValue(forKey: "isExecuting")
        return true
    }

    /// The work of a synchronous operation. The default does nothing. Poll `isCancelled`.
    open func main() {}

    /// Sets the cancelled flag (idempotent). An operation that has not started becomes ready
    /// at once, even while a dependency still executes, so its queue can retire it; it then
    /// counts as finished for its dependents. On an operation that already finished it has no
    /// effect: `isCancelled` stays false (O8).
    open func cancel() {
        let old = state.load(ordering: .acquiring)
        if old & State.cancelled != 0 { return }
        // The getter, as Foundation: a subclass that keeps its own finished flag is asked.
        if isFinished { return }
        willChangeValue(forKey: "isCancelled")
        let previous = state.bitwiseOr(State.cancelled, ordering: .acquiringAndReleasing).oldValue
        if previous & State.cancelled == 0 {
            op_task_cancel(task)
            releaseReadinessHold()
        }
        didChangeValue(forKey: "isCancelled")
        if previous & State.cancelled == 0 { didChangeValue(forKey: "isReady") }
    }

    /// Blocks until the operation finished. Calling it from inside the operation traps.
    ///
    /// Unavailable from async code, as in Foundation: there `await waitUntilFinished()`
    /// suspends the calling task instead of blocking its thread.
    @available(*, noasync, message: "use await waitUntilFinished(), which suspends instead of blocking a thread; in top-level code (main.swift) after an await, wrap the wait in a function or use the async form")
    open func waitUntilFinished() {
        if op_task_current() == task {
            operationMisuse("waitUntilFinished() called on \(self) from inside its own work; it would wait forever")
        }
        // The core reference keeps the task alive across the wait in a way ThreadSanitizer
        // sees (it does not see Swift's reference counts as synchronising).
        op_task_retain(task)
        defer { op_task_release(task) }
        // No priority inversion: the operation and its dependencies run at least at the
        // waiting thread's QoS until they finished (the core raises the operation itself too).
        if !op_task_is_finished(task) { promoteForWaiter(op_current_thread_qos()) }
        // Wait in slices; while blocked, look for a dependency cycle (D4) that would make the
        // wait endless, and report it instead of hanging silently. The look walks what the
        // operation still waits for (O(operations), no recursion): the slices double, so a long
        // graph that is making progress is not walked over and over.
        var slice = Operation.cycleCheckIntervalNs
        while op_task_wait(task, slice) == ETIMEDOUT {
            if !isExecuting, let cycle = reachableDependencyCycle() {
                operationMisuse("waitUntilFinished() on \(self) would wait forever: dependency cycle \(Operation.describeCycle(cycle))")
            }
            slice = min(slice * 2, Operation.cycleCheckLongestIntervalNs)
        }
    }

    // MARK: - Dependencies (the work is in Operation+Dependencies.swift)

    /// Makes the receiver wait until `operation` finished (or was cancelled and retired), on
    /// any queue or none. Configure dependencies before adding the receiver to a queue (Apple's
    /// advice); one added to an operation that sits in a queue but has not started still holds
    /// it back; once it started, a new dependency has no effect. Adding the same dependency
    /// twice counts once. When the last dependency finishes, the receiver re-reads `isReady`
    /// and posts an "isReady" change.
    open func addDependency(_ operation: Operation) { addDependencyToCore(operation) }

    /// Removes a dependency; if it had not finished, the receiver may become ready at once.
    open func removeDependency(_ operation: Operation) { removeDependencyFromCore(operation) }

    /// The operations the receiver depends on, in the order they were added.
    open var dependencies: [Operation] { readExtras([]) { $0.dependencies.array } }

    /// The dependencies as the operation keeps them (no array is made), whatever a subclass's
    /// `dependencies` reports.
    var dependencyList: DependencyList { readExtras(DependencyList()) { $0.dependencies } }

    // MARK: - KVO compatibility (the work is in Operation+Observation.swift)

    /// Announces that the value for `key` is about to change. Nothing happens before a change;
    /// it exists so Foundation code that brackets its changes compiles and runs unchanged.
    open func willChangeValue(forKey key: String) {}

    /// Announces that the value for `key` changed. For "isFinished" the operation is finished
    /// once `isFinished` reads true: its queue slot is freed and its dependents may start. For
    /// "isReady" the queue re-reads `isReady`. Observers of the key are called. Unknown keys
    /// are harmless. Any thread may call it, also while holding its own lock.
    open func didChangeValue(forKey key: String) { announceChange(forKey: key) }

    /// Type, name and state, e.g. `BlockOperation "fetch" (executing)`; misuse messages name
    /// operations with it. Subclasses may override it, as NSObject's.
    open var description: String { defaultDescription }

    // MARK: - Internals

    /// How long a blocked wait sleeps before its first look for a dependency cycle; each look
    /// that finds none doubles it, up to `cycleCheckLongestIntervalNs`.
    static let cycleCheckIntervalNs: Int64 = 100_000_000
    static let cycleCheckLongestIntervalNs: Int64 = 1_600_000_000

    /// The core class whose nice value the operation's work runs at: run by its queue, the class
    /// the core runs it at now (its own, its queue's, or the one it was promoted to: a thread
    /// priority applies on top of a promotion, as one request); by hand, its own or the default.
    var effectiveCoreQoS: op_qos_t {
        if op_queue_current() != nil, op_task_current() == task { return op_current_thread_qos() }
        let own = qualityOfService
        return own != .default ? own.coreClass : OP_QOS_DEFAULT
    }

    /// The default start's way to finished: both KVO pairs, then `finishIfAnnounced`.
    func markFinished() {
        let wasExecuting = state.load(ordering: .acquiring) & State.executing != 0
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        // One step, so no reader sees finished and executing together.
        var current = state.load(ordering: .relaxed)
        while true {
            let desired = (current | State.finished) & ~State.executing
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
        // Finished means `isFinished` reads true: a subclass that keeps its own flag (or
        // combines it with super's) completes when it announces that flag (O5).
        completeIfFinished()
    }

    /// Completes the operation once its `isFinished` reads true (the getter: a subclass may keep
    /// its own flag); nothing before that, or once completed.
    final func completeIfFinished() {
        if state.load(ordering: .acquiring) & State.completed == 0 && isFinished { completeOnce() }
    }

    /// Whether the operation is a `BlockOperation` itself, not a subclass: nothing of it can be
    /// overridden (the queue's fast path; readiness announcements it cannot need).
    @inline(__always)
    final var isPlainBlockOperation: Bool {
        ObjectIdentifier(type(of: self)) == ObjectIdentifier(BlockOperation.self)
    }

    /// Runs once per operation when it is finished: the core task (which releases dependents
    /// and waiters, and the queue's slot), the readiness announcements of the operations that
    /// wait for it, and then the completion block, on a thread of its own
    /// (`runCompletionBlock`): a wait for the operation never waits for its completion block.
    /// The queue's reference is dropped by the queue's registry (`releaseQueuedOperation`) soon
    /// after the finish, once no listing of `operations` can reach the operation any more. The
    /// caller holds a reference.
    func completeOnce() {
        let old = state.bitwiseOr(State.completed, ordering: .acquiringAndReleasing).oldValue
        if old & State.completed != 0 { return }
        // Taken before the finish (the property reads nil from now on, as Apple's does once the
        // block started), run after it; at the class the operation's work ran at.
        var completion: (block: @Sendable () -> Void, qos: op_qos_t)?
        if old & State.hasCompletion != 0 {
            let block = StripedLock.shared.withLock(for: self) { () -> (@Sendable () -> Void)? in
                guard let extras = lockedExtras else { return nil }
                let block = extras.completionBlock
                extras.completionBlock = nil
                return block
            }
            if let block { completion = (block, effectiveCoreQoS) }
        }
        // A subclass that overrides start() without calling super never sets `started`: its
        // core task running (a worker took it and the queue called start(); it stays running
        // until this completion) says that the queue started it. So an asynchronous operation
        // that finishes later, or a cancelled one that finishes inside start(), is not warned.
        if old & (State.enqueued | State.started) == State.enqueued && !op_task_is_executing(task) {
            Operation.warnFinishedBeforeStarted(self)
        }
        // On a queued operation that has not started (an asynchronous operation that finished
        // itself, say from an overridden cancel()) the core finishes the task at once and its
        // queue retires it without calling start(), as Apple's queue does.
        op_task_complete(task)
        // After the core task finished: a dependent or async waiter that registers from now on
        // sees the mark (and re-checks its own readiness, or returns); one that registered
        // before is announced or resumed here.
        let closing = state.bitwiseOr(State.dependentsClosed, ordering: .acquiringAndReleasing).oldValue
        if closing & State.hasFinishWaiters != 0 { resumeFinishWaiters() }
        if closing & State.hasDependents != 0 { announceReadinessOfDependents() }
        if let completion { runCompletionBlock(completion.block, qos: completion.qos) }
    }

    /// Whether the warning of `warnFinishedBeforeStarted` was printed (once per process).
    private static let warnedFinishedBeforeStarted = Atomic<Bool>(false)

    /// Apple's queue logs "went isFinished=YES without being started by the queue it is in" and
    /// goes on; we say the same, once per process, and go on: the queue retires the operation
    /// without calling start(), its dependents start and its slot is never taken.
    static func warnFinishedBeforeStarted(_ operation: Operation) {
        // relaxed: only decides which caller prints.
        if warnedFinishedBeforeStarted.exchange(true, ordering: .relaxed) { return }
        let message = "Operations: \(operation) finished before its queue started it (isFinished became true while it waited in the queue); the queue retires it without calling start(). Finish an asynchronous operation only after start() ran: from start(), or from cancel() only once it is executing. (Said once per process.)\n"
        message.withCString { text in _ = Glibc.write(2, text, strlen(text)) }
    }

    /// Called by the core task's body on a worker: the queue starts the operation.
    func runFromQueue() {
        // cancelAllOperations cancels barriers in the core; an operation cancelled there (it
        // raced with being listed) takes the cancellation over here.
        if !isCancelled && op_task_is_cancelled(task) { cancel() }
        if !isCancelled && !isReady {
            // O12: a custom isReady said no. Park the task with a hold until an "isReady"
            // change makes it ready; re-check after taking the hold so no change is missed.
            op_task_defer(task)
            state.bitwiseOr(State.readinessHeld, ordering: .releasing)
            if isCancelled || isReady { releaseReadinessHold() }
            return
        }
        // A queue with an underlying dispatch queue (the main queue: the main thread) runs the
        // operation there; the worker returns and the queue slot stays taken until it finished.
        if let running = OperationQueue.runningQueueWithUnderlyingQueue() {
            let owner = running.takeUnretainedValue()
            if let target = owner.underlyingQueue {
                // The queue object (and with it its core queue) lives while it holds this
                // unfinished operation, so the dispatch block may use it.
                target.async { [self, owner] in
                    let previousQueue = op_queue_swap_current(owner.core)
                    let previousTask = op_task_swap_current(task)
                    startFromQueue()
                    op_task_swap_current(previousTask)
                    op_queue_swap_current(previousQueue)
                }
                return
            }
        }
        startFromQueue()
    }

    /// The queue's call of start(), and the slot's release for a subclass that finished
    /// without announcing it.
    private func startFromQueue() {
        state.bitwiseOr(State.queueStarting, ordering: .releasing)
        start()
        state.bitwiseAnd(~State.queueStarting, ordering: .releasing)
        // A subclass that finished without announcing it through didChangeValue still frees
        // its queue slot once start() returned.
        completeIfFinished()
    }

    /// Drops the readiness hold, once, if one is taken.
    func releaseReadinessHold() {
        if state.bitwiseAnd(~State.readinessHeld, ordering: .acquiringAndReleasing).oldValue & State.readinessHeld != 0 {
            op_task_unhold(task)
        }
    }

    /// Claims the operation for a queue; traps for an operation that cannot be added.
    /// `batch`: the operations of an `addOperations` call, this one at `index`, so that an
    /// operation listed twice is named as such (looked at only on that error path: the enqueued
    /// bit catches the repeat, so a batch needs no set of what it holds).
    final func claimForQueue(_ queue: OperationQueue, batch: [Operation]? = nil, index: Int = 0) {
        let old = state.bitwiseOr(State.enqueued, ordering: .acquiringAndReleasing).oldValue
        if old & State.finished != 0 {
            operationMisuse("\(self) added to \(queue), but it is already finished")
        }
        if old & State.enqueued != 0 {
            if let batch, batch[..<index].contains(where: { $0 === self }) {
                operationMisuse("\(self) appears twice in addOperations(_:waitUntilFinished:) on \(queue)")
            }
            operationMisuse("\(self) added to \(queue), but it is already in an OperationQueue")
        }
        if old & (State.started | State.executing) != 0 {
            operationMisuse("\(self) added to \(queue), but it is already executing")
        }
        _ = Unmanaged.passUnretained(self).retain() // released by releaseQueuedOperation
    }
}

/// The core task body of every operation: its queue starts it.
let operationTaskBody: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    let unmanaged = Unmanaged<Operation>.fromOpaque(context)
    // The queue's reference keeps the operation alive until its core task finished, and the
    // fast path touches it no more after that: no retain.
    if unmanaged._withUnsafeGuaranteedRef({ $0.runPlainFromQueue() }) { return }
    // Held for the whole body: finishing drops the queue's reference, which may be the last.
    let operation = unmanaged.takeUnretainedValue()
    withExtendedLifetime(operation) { operation.runFromQueue() }
}

/// A programmer error: traps with a message that names the object and what was wrong.
func operationMisuse(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("Operations misuse: \(message)", file: file, line: line)
}

extension Operation: Hashable {
    /// Identity, as NSObject's default.
    public static func == (lhs: Operation, rhs: Operation) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension Operation: CustomStringConvertible {}

extension Operation {
    /// Type, name and state, e.g. `BlockOperation "fetch" (executing)`. What `description`
    /// reports unless a subclass overrides it.
    var defaultDescription: String {
        var text = String(describing: type(of: self))
        if let name { text += " \"\(name)\"" }
        let bits = state.load(ordering: .acquiring)
        var words: [String] = []
        if bits & State.cancelled != 0 { words.append("cancelled") }
        if bits & State.finished != 0 { words.append("finished") } else if bits & State.executing != 0 { words.append("executing") }
        else if bits & State.enqueued != 0 { words.append("queued") }
        if !words.isEmpty { text += " (\(words.joined(separator: ", ")))" }
        return text
    }
}
