// TaskOperation.swift — an operation whose body is async: it runs as a Swift task that keeps its
// queue's width slot from start to finish but holds no thread while suspended, and whose jobs
// run on the queue's workers at the operation's QoS (the queue's body executor is the task's
// executor preference; see OperationQueue+Executor.swift).

/// An `Operation` whose work is an async closure, the asynchronous operation that libraries on
/// Foundation each write by hand, with the KVO and finishing rules done once, right.
///
/// - It is asynchronous (`isAsynchronous` is true): `start()` returns once the body first
///   suspends, and the operation finishes when the body returns or throws. `error` then holds
///   what it threw.
/// - Started by its queue, the body runs as a task whose executor preference is the queue: its
///   first part runs at once on the worker that started it, and every part after a suspension
///   runs on the queue's workers too, at the operation's QoS (its own, or the queue's) and with
///   `OperationQueue.current` being the queue. It keeps its width slot until it finished, but
///   while suspended holds no thread. Started by hand, it runs on the global concurrent executor.
/// - `cancel()` while it runs cancels its task (`Task.isCancelled` reads true in the body);
///   cancelled before it starts, its body never runs and it finishes at once.
/// - Dependencies, completion blocks, observers, priorities, QoS and waits work as for any
///   operation; `await waitUntilFinished()` suspends instead of blocking.
///
/// `threadPriority` applies to synchronous `main()` work only: a TaskOperation's jobs run at its
/// QoS class's nice value. On a serial queue that is also an actor's executor, a body that
/// awaits that actor waits forever: the operation holds the queue's only slot.
open class TaskOperation: Operation, @unchecked Sendable {
    private let body: @Sendable () async throws -> Void
    // Guarded by the operation's stripe of StripedLock.shared.
    private var lockedError: (any Error)?
    private var lockedTask: Task<Void, Never>?
    private var lockedBodyTask: UnsafeCurrentTask?
    private var lockedQueue: OperationQueue?

    /// The TaskOperation whose body the current task runs (inherited by child tasks).
    @TaskLocal static var runningBody: TaskOperation?

    /// An operation that runs `body` as a Swift task when started.
    public init(_ body: @escaping @Sendable () async throws -> Void) {
        self.body = body
        super.init()
    }

    /// True: the operation finishes when its body returns, not when `start()` does.
    open override var isAsynchronous: Bool { true }

    /// What the body threw, once it finished; nil while it runs, when it returned normally, or
    /// when it never ran.
    public var error: (any Error)? {
        StripedLock.shared.withLock(for: self) { lockedError }
    }

    /// Starts the body as a task (see the type's documentation) and returns; a cancelled
    /// operation finishes instead. The same misuse checks as `Operation.start()`.
    public final override func start() {
        let byQueue = state.load(ordering: .acquiring) & State.queueStarting != 0
        guard beginExecuting() else { return }
        let queue = byQueue ? OperationQueue.current : nil
        let own = qualityOfService
        let priority = TaskPriority(own != .default ? own : queue?.qualityOfService ?? .default)
        let task: Task<Void, Never>
        if let queue {
            queue.bodyExecutor.prepare(for: queue)
            StripedLock.shared.withLock(for: self) { lockedQueue = queue }
            // Immediate: the first part runs here, on the worker and in the slot that started
            // the operation; every later part goes to the queue's body executor.
            task = Task.immediate(priority: priority, executorPreference: queue.bodyExecutor) { [self] in
                await runBody()
            }
        } else {
            task = Task(priority: priority) { [self] in await runBody() }
        }
        StripedLock.shared.withLock(for: self) { lockedTask = task }
        // cancel() sets the flag before it looks for the task under the lock: one of the two
        // sees the other.
        if isCancelled { task.cancel() }
    }

    /// Cancels the operation (see `Operation.cancel()`) and, while its body runs, its task.
    open override func cancel() {
        super.cancel()
        StripedLock.shared.withLock(for: self) { lockedTask }?.cancel()
    }

    private func runBody() async {
        withUnsafeCurrentTask { current in
            StripedLock.shared.withLock(for: self) { lockedBodyTask = current }
        }
        do {
            try await TaskOperation.$runningBody.withValue(self) { try await body() }
        } catch {
            StripedLock.shared.withLock(for: self) { lockedError = error }
        }
        do {
            let queue = StripedLock.shared.withLock(for: self) { () -> OperationQueue? in
                defer {
                    lockedBodyTask = nil
                    lockedQueue = nil
                }
                return lockedQueue
            }
            // Its body is its main(): one unit of its queue's progress, before it is finished.
            // The queue reference goes before the finish, as it went before.
            queue?.countFinishedWork(of: self)
        }
        markFinished()
    }

    /// Whether the calling task is this operation's body task itself (not a child of it).
    var isCurrentBodyTask: Bool {
        withUnsafeCurrentTask { current in
            guard let current else { return false }
            return StripedLock.shared.withLock(for: self) { lockedBodyTask == current }
        }
    }

    /// The queue running the body, while it runs.
    var runningQueue: OperationQueue? {
        StripedLock.shared.withLock(for: self) { lockedQueue }
    }
}
