// LivenessInterpreter.swift — runs the liveness fuzzer's programs (LivenessPrograms.swift makes
// them) on the runtime under test: the wake-ups invisible waiters block on, the asynchronous
// operation and deinit-waiter kinds, and the run itself with its deadline and report.
import Testing

/// Releases one invisible waiter, however it blocks; `signal()` is idempotent.
final class LivenessWakeup: @unchecked Sendable {
    let how: LivenessProgram.Block
    private let lock = Lock()
    private var fired = false  // guarded by `lock`
    private let semaphore = DispatchSemaphore(value: 0)
    // A pthread condition variable (NSCondition is Foundation's, not in the Operations build).
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var conditionFired = false  // guarded by `mutex`
    private var fds: [Int32] = [-1, -1]

    init(_ how: LivenessProgram.Block) {
        self.how = how
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        if how == .pipeRead || how == .poll {
            fds.withUnsafeMutableBufferPointer { _ = pipe($0.baseAddress!) }
        }
    }

    deinit {
        for fd in fds where fd >= 0 { close(fd) }
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    var isFired: Bool { lock.withLock { fired } }

    func signal() {
        let first = lock.withLock { () -> Bool in
            defer { fired = true }
            return !fired
        }
        guard first else { return }
        switch how {
        case .semaphore: semaphore.signal()
        case .condition:
            pthread_mutex_lock(mutex)
            conditionFired = true
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        case .pipeRead, .poll:
            var byte: UInt8 = 1
            _ = write(fds[1], &byte, 1)
        case .usleep: break
        }
    }

    /// Blocks the calling thread, invisibly to the runtime, until `signal()`.
    func wait() {
        switch how {
        case .semaphore: semaphore.wait()
        case .condition:
            pthread_mutex_lock(mutex)
            while !conditionFired { pthread_cond_wait(condition, mutex) }
            pthread_mutex_unlock(mutex)
        case .pipeRead:
            var byte: UInt8 = 0
            while read(fds[0], &byte, 1) != 1 {}
        case .poll:
            var descriptor = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
            while !isFired { _ = poll(&descriptor, 1, 5) }
        case .usleep:
            while !isFired { usleep(500) }
        }
    }
}

/// The asynchronous subclass of the fuzzer: starts executing in start() (unless cancelled), and
/// finishes `after` µs later from another thread; with `finishesOnCancel`, cancel() finishes it.
final class LivenessAsyncOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var executing = false  // guarded by `lock`
    private var finished = false   // guarded by `lock`
    private var worked = false     // guarded by `lock`
    private var finishing = false  // guarded by `lock`
    let after: Int
    let finishesOnCancel: Bool

    init(after: Int, finishesOnCancel: Bool) {
        self.after = after
        self.finishesOnCancel = finishesOnCancel
        super.init()
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }
    /// Whether it began its work (start() found it not cancelled).
    var didWork: Bool { lock.withLock { worked } }

    override func start() {
        if isFinished { return }
        if isCancelled { finish(); return }
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true; worked = true }
        didChangeValue(forKey: "isExecuting")
        DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(after)) { self.finish() }
    }

    override func cancel() {
        super.cancel()
        // Foundation on Linux loses count of an asynchronous operation that finishes before its
        // queue started it: it runs its completion block twice, and at times operationCount
        // never drops again, so waitUntilAllOperationsAreFinished() hangs (seed
        // 2859023860086661320 did, 1 program in 63). There, cancel() finishes it only once it
        // started; Operations gets the whole pattern (Apple's: the queue retires it).
        if finishesOnCancel && (!onFoundation || didWork) { finish() }
    }

    /// Idempotent: the first caller announces the finish.
    func finish() {
        let (first, wasExecuting) = lock.withLock { () -> (Bool, Bool) in
            defer { finishing = true }
            return (!finishing, executing)
        }
        guard first else { return }
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        lock.withLock {
            finished = true
            executing = false
        }
        didChangeValue(forKey: "isFinished")
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
    }
}

/// Captured only by a closure operation: its deinit waits for its own queue.
final class LivenessDeinitWaiter: @unchecked Sendable {
    let queue: OperationQueue
    let done: Latch
    /// The interpreter's thread: if the last reference goes there (the operation finished
    /// before the interpreter's own reference went), the wait moves to a thread of its own, so
    /// the interpreter goes on with its steps (a queue it has yet to resume would hang it).
    let interpreterThread: Int32
    init(queue: OperationQueue, done: Latch, interpreterThread: Int32) {
        self.queue = queue
        self.done = done
        self.interpreterThread = interpreterThread
    }
    func touch() {}
    deinit {
        let queue = queue, done = done
        // Foundation on Linux releases a finished operation under its queue's lock, so a deinit
        // that waits for the queue deadlocks Foundation itself (every worker then blocks on that
        // lock): there the wait moves to a thread of its own. Operations runs it in place, unless
        // the last reference went on a thread that runs one of this queue's operations (another
        // operation's finish can drop it, announcing readiness to its dependents): a wait for
        // the own queue from there would wait for itself, a misuse on any runtime.
        if onFoundation || currentThreadID() == interpreterThread || OperationQueue.current === queue {
            onNewThread { queue.waitUntilAllOperationsAreFinished(); done.open() }
            return
        }
        queue.waitUntilAllOperationsAreFinished()
        done.open()
    }
}

/// One run of a program: its queues, operations and records.
final class LivenessRun: @unchecked Sendable {
    let program: LivenessProgram
    let queues: [OperationQueue]
    private(set) var operations: [Operation] = []
    let wakeups: [Int: LivenessWakeup]
    let bodyRuns: [Counter]
    let completionRuns: [Counter]
    let completions = Latch()
    let deinitsDone = Latch()
    /// Operations cancelled where the body cannot have started (queue suspended since before
    /// the add, or not added yet).
    private(set) var mustNotRun: Set<Int> = []
    /// Set by the interpreter thread, read after it finished (or by the timeout report).
    let progress = Locked("not started")
    /// The program's lock (grammar 2): `waitHoldingLock` steps hold it while they wait,
    /// completion blocks with the `lock` action take it.
    let sharedLock = Lock()
    /// The helper threads of `waitHoldingLock` steps.
    private var lockHolders: [Latch] = []
    /// Bodies that started before a dependency set before their add had finished.
    let orderViolations = Locked<[String]>([])
    /// Operations that completion blocks added to their queues (`addToQueue`), with their runs.
    let extras = Locked<[(operation: Operation, runs: Counter)]>([])
    /// The Foundation queue of `program.bridgeQueue` (ours) or a serial Foundation queue
    /// (Foundation's), and the bridge operations with their runs and completions.
    private(set) var bridge: Foundation.OperationQueue?
    private(set) var bridgeOperations: [Foundation.Operation] = []
    let bridgeRuns: [Counter]
    let bridgeCompletions: [Counter]
    /// The run of a program of another shape (LivenessShapes.swift); nil for a mixed program.
    let shapeRun: LivenessShapeRun?

    /// Every queue of the run, for a report.
    var allQueues: [OperationQueue] { queues + (shapeRun?.queues.withLock { $0 } ?? []) }

    init(_ program: LivenessProgram) {
        self.program = program
        queues = program.queues.enumerated().map { index, width in
            let queue = OperationQueue()
            queue.name = "liveness q\(index)"
            if let count = width.count { queue.maxConcurrentOperationCount = count }
            return queue
        }
        var wakeups: [Int: LivenessWakeup] = [:]
        for (index, op) in program.ops.enumerated() {
            if case .invisibleWait(_, let how) = op.kind { wakeups[index] = LivenessWakeup(how) }
        }
        self.wakeups = wakeups
        bodyRuns = program.ops.map { _ in Counter() }
        completionRuns = program.ops.map { _ in Counter() }
        bridgeRuns = program.bridgeOps.map { _ in Counter() }
        bridgeCompletions = program.bridgeOps.map { _ in Counter() }
        let progress = self.progress
        shapeRun = program.shape.map { LivenessShapeRun($0, progress: progress) }
        if let bridged = program.bridgeQueue {
            #if BEHAVIOUR_ON_FOUNDATION
            let serial = OperationQueue()
            serial.maxConcurrentOperationCount = 1
            serial.name = "liveness bridge of q\(bridged)"
            bridge = serial
            #else
            bridge = queues[bridged].foundationQueue
            #endif
        }
    }

    var expectedCompletions: Int { program.ops.filter(\.completion).count }
    var expectedBridgeCompletions: Int { program.bridgeOps.filter(\.completion).count }
    var expectedDeinits: Int { program.ops.filter { if case .deinitWait = $0.kind { return true }; return false }.count }

    private func makeOperations() {
        var made: [Operation] = []
        for (index, spec) in program.ops.enumerated() {
            // The dependencies set before the add: every one finished when the body starts
            // (a late one may come after the body started, and then holds nothing).
            let before = spec.dependencies.map { made[$0] }
            let order = orderViolations
            let startCheck: @Sendable () -> Void = {
                for dependency in before where !dependency.isFinished {
                    order.withLock { $0.append("#\(index) started before its dependency \(dependency.name ?? "?") finished") }
                }
            }
            let ran = bodyRuns[index]
            let releases = spec.signals.compactMap { wakeups[$0] }
            let operation: Operation
            switch spec.kind {
            case .plain:
                operation = BlockOperation {
                    startCheck()
                    ran.increment()
                    for wakeup in releases { wakeup.signal() }
                }
            case .invisibleWait(let on, _):
                let wakeup = wakeups[index]!
                _ = on
                operation = BlockOperation {
                    startCheck()
                    ran.increment()
                    wakeup.wait()
                }
            case .visibleWait(let on):
                let target = made[on]
                operation = BlockOperation {
                    startCheck()
                    ran.increment()
                    target.waitUntilFinished()
                }
            case .setWidth(let queueIndex, let width):
                let queue = queues[queueIndex]
                operation = BlockOperation {
                    startCheck()
                    ran.increment()
                    queue.maxConcurrentOperationCount = width
                }
            case .async(let after, let finishesOnCancel):
                operation = LivenessAsyncOperation(after: after, finishesOnCancel: finishesOnCancel)
            case .deinitWait:
                // Never held: a placeholder keeps the indices.
                operation = BlockOperation {}
            }
            operation.name = "#\(index)"
            if spec.completion {
                let count = completionRuns[index]
                let completions = self.completions
                let action = completionAction(spec.completionAction, of: operation, on: queues[spec.queue], earlier: made)
                operation.completionBlock = {
                    count.increment()
                    for wakeup in releases { wakeup.signal() }
                    action()
                    completions.arrive()
                }
            }
            if let priority = spec.priority { operation.queuePriority = priority }
            if let qos = spec.qos { operation.qualityOfService = qos }
            #if !BEHAVIOUR_ON_FOUNDATION
            // Foundation on Linux has no threadPriority: there the programs run without it.
            if let threadPriority = spec.threadPriority { operation.threadPriority = threadPriority }
            #endif
            for dependency in spec.dependencies { operation.addDependency(made[dependency]) }
            made.append(operation)
        }
        operations = made
        bridgeOperations = program.bridgeOps.indices.map { index in
            let runs = bridgeRuns[index]
            let operation = Foundation.BlockOperation { runs.increment() }
            operation.name = "b\(index)"
            if program.bridgeOps[index].completion {
                let count = bridgeCompletions[index]
                let completions = self.completions
                operation.completionBlock = {
                    count.increment()
                    completions.arrive()
                }
            }
            return operation
        }
        for (index, op) in program.bridgeOps.enumerated() {
            for dependency in op.dependencies { bridgeOperations[index].addDependency(bridgeOperations[dependency]) }
        }
    }

    /// What a completion block does after it counted and signalled (grammar 2).
    private func completionAction(_ action: LivenessProgram.CompletionAction, of operation: Operation,
                                  on queue: OperationQueue, earlier: [Operation]) -> @Sendable () -> Void {
        // Weak: the block is the operation's own property until it runs.
        final class Weak: @unchecked Sendable { weak var operation: Operation? }
        let own = Weak()
        own.operation = operation
        switch action {
        case .none: return {}
        case .waitOwn: return { own.operation?.waitUntilFinished() }
        case .waitEarlier(let on):
            let target = earlier[on]
            return { target.waitUntilFinished() }
        case .waitQueue: return { queue.waitUntilAllOperationsAreFinished() }
        case .lock:
            let lock = sharedLock
            return { lock.withLock {} }
        case .addToQueue:
            let extras = self.extras
            return {
                let runs = Counter()
                let added = BlockOperation { runs.increment() }
                added.name = "added by the completion block of \(own.operation?.name ?? "?")"
                extras.withLock { $0.append((added, runs)) }
                queue.addOperation(added)
            }
        case .cancelQueue: return { queue.cancelAllOperations() }
        }
    }

    /// A closure that alone holds a `LivenessDeinitWaiter` of `queue`.
    private func deinitWaitBody(queue: OperationQueue, ran: Counter) -> @Sendable () -> Void {
        let waiter = LivenessDeinitWaiter(queue: queue, done: deinitsDone, interpreterThread: currentThreadID())
        return { waiter.touch(); ran.increment() }
    }

    /// Runs the steps, resumes every queue and waits for everything; returns when the program
    /// completed (the caller bounds it).
    func run() {
        if let shapeRun {
            shapeRun.run()
            progress.withLock { $0 = "done" }
            return
        }
        makeOperations()
        var suspended = Array(repeating: false, count: queues.count)
        var added = Set<Int>()
        var held: [Int: Set<Int>] = [:]  // queue → operations added while it was suspended
        func cancelled(_ index: Int) {
            if !added.contains(index) { mustNotRun.insert(index) }
            if held[program.ops[index].queue, default: []].contains(index) { mustNotRun.insert(index) }
        }
        for (number, step) in program.steps.enumerated() {
            progress.withLock { $0 = "step \(number): \(step)" }
            switch step {
            case .add(let index):
                let spec = program.ops[index]
                let queue = queues[spec.queue]
                if case .deinitWait = spec.kind {
                    queue.addOperation(deinitWaitBody(queue: queue, ran: bodyRuns[index]))
                } else {
                    queue.addOperation(operations[index])
                }
                added.insert(index)
                if suspended[spec.queue] { held[spec.queue, default: []].insert(index) }
            case .cancel(let index):
                cancelled(index)
                operations[index].cancel()
            case .cancelAll(let queue):
                for index in held[queue, default: []] { mustNotRun.insert(index) }
                queues[queue].cancelAllOperations()
            case .suspend(let queue):
                suspended[queue] = true
                queues[queue].isSuspended = true
            case .resume(let queue):
                suspended[queue] = false
                held[queue] = []
                queues[queue].isSuspended = false
            case .setWidth(let queue, let width):
                queues[queue].maxConcurrentOperationCount = width
            case .setPriority(let index, let priority):
                operations[index].queuePriority = priority
            case .setQoS(let queue, let qos):
                queues[queue].qualityOfService = qos
            case .barrier(let queue):
                queues[queue].addBarrierBlock {}
            case .pause(let micros):
                usleep(UInt32(micros))  // varies the moments of the next steps; no synchronisation
            case .waitHoldingLock(let index):
                let target = operations[index]
                let lock = sharedLock
                lockHolders.append(onNewThread {
                    lock.withLock { target.waitUntilFinished() }
                })
            case .addDependency(let index, let on):
                operations[index].addDependency(operations[on])
            case .bridgeAdd(let index):
                bridge?.addOperation(bridgeOperations[index])
            }
        }
        for queue in queues { queue.isSuspended = false }
        for (index, queue) in queues.enumerated() {
            progress.withLock { $0 = "waitUntilAllOperationsAreFinished of q\(index)" }
            queue.waitUntilAllOperationsAreFinished()
        }
        if let bridge {
            progress.withLock { $0 = "waitUntilAllOperationsAreFinished of the bridge" }
            bridge.waitUntilAllOperationsAreFinished()
        }
        for (index, holder) in lockHolders.enumerated() {
            progress.withLock { $0 = "the wait holding the lock (\(index + 1) of \(lockHolders.count))" }
            while !holder.wait(for: 1, seconds: 1) {}
        }
        let expected = expectedCompletions + expectedBridgeCompletions
        progress.withLock { $0 = "waiting for \(expected) completion blocks" }
        // Completion blocks may run after waitUntilAllOperationsAreFinished returned.
        while !completions.wait(for: expected, seconds: 1) {}
        // What completion blocks added to their queues.
        for (index, queue) in queues.enumerated() where !extras.withLock({ $0.isEmpty }) {
            progress.withLock { $0 = "waitUntilAllOperationsAreFinished of q\(index) for what completion blocks added" }
            queue.waitUntilAllOperationsAreFinished()
        }
        // Foundation on Linux at times keeps a finished closure operation (and what it captured)
        // alive past its queue's drain (seed 17801196403012089911 never freed it): there the
        // deinit waits are not waited for. Operations must free them, and the waits must return.
        if !onFoundation {
            progress.withLock { $0 = "waiting for \(expectedDeinits) deinit waits" }
            while !deinitsDone.wait(for: expectedDeinits, seconds: 1) {}
        }
        progress.withLock { $0 = "done" }
    }

    /// After a timeout: lets every blocked body and queue go, so its threads can leave.
    func unblockEverything() {
        shapeRun?.unblockEverything()
        for wakeup in wakeups.values { wakeup.signal() }
        bridge?.isSuspended = false
        for queue in queues { queue.isSuspended = false }
        for operation in operations {
            (operation as? LivenessAsyncOperation)?.finish()
        }
    }

    /// The state of every operation, for a failure message.
    var stateReport: String {
        if let shapeRun {
            return shapeRun.queues.withLock { $0 }.enumerated().map {
                "  \($0.element.name ?? "q\($0.offset)"): operationCount \($0.element.operationCount) suspended \($0.element.isSuspended)"
            }.joined(separator: "\n")
        }
        var lines: [String] = []
        for (index, operation) in operations.enumerated() {
            if case .deinitWait = program.ops[index].kind {
                lines.append("  #\(index) deinit-wait op: body runs \(bodyRuns[index].current)")
                continue
            }
            var flags: [String] = []
            if operation.isFinished { flags.append("finished") }
            if operation.isExecuting { flags.append("executing") }
            if operation.isCancelled { flags.append("cancelled") }
            if operation.isReady { flags.append("ready") }
            lines.append("  #\(index) q\(program.ops[index].queue) \(program.ops[index].kind): \(flags.joined(separator: " ")) body runs \(bodyRuns[index].current) completions \(completionRuns[index].current)")
        }
        for (index, operation) in bridgeOperations.enumerated() {
            lines.append("  b\(index): finished \(operation.isFinished) executing \(operation.isExecuting) cancelled \(operation.isCancelled) ready \(operation.isReady) runs \(bridgeRuns[index].current) completions \(bridgeCompletions[index].current)")
        }
        for (operation, runs) in extras.withLock({ $0 }) {
            lines.append("  \(operation.name ?? "?"): finished \(operation.isFinished) cancelled \(operation.isCancelled) runs \(runs.current)")
        }
        let queueLines = queues.enumerated().map { "  q\($0.offset): operationCount \($0.element.operationCount) suspended \($0.element.isSuspended) width \($0.element.maxConcurrentOperationCount)" }
        return (queueLines + lines).joined(separator: "\n")
    }

    /// The oracle, once the program completed: problems found (empty when it behaved).
    func check() -> [String] {
        if let shapeRun { return shapeRun.check() }
        var problems: [String] = orderViolations.withLock { $0 }
        for (index, spec) in program.ops.enumerated() {
            let runs = bodyRuns[index].current
            if case .deinitWait = spec.kind {
                if runs > 1 { problems.append("#\(index): body ran \(runs) times") }
                continue
            }
            let operation = operations[index]
            if !operation.isFinished { problems.append("#\(index): not finished") }
            let completed = completionRuns[index].current
            if spec.completion && completed != 1 {
                // Foundation on Linux runs the completion block of an asynchronous operation that
                // finished itself before its queue started it once more when the queue gets to it
                // ("went isFinished=YES without being started by the queue it is in"): a bug of
                // Foundation's, not held against it here.
                // (Not generated there any more: see LivenessAsyncOperation.cancel().)
                let foundationRerun = onFoundation && completed > 1
                    && (operation as? LivenessAsyncOperation).map { $0.finishesOnCancel && !$0.didWork } == true
                if !foundationRerun { problems.append("#\(index): completion block ran \(completed) times") }
            }
            if let async = operation as? LivenessAsyncOperation {
                if mustNotRun.contains(index) && async.didWork { problems.append("#\(index): cancelled before it could start, yet began its work") }
                if !operation.isCancelled && !async.didWork { problems.append("#\(index): not cancelled, yet never began its work") }
            } else {
                if runs > 1 { problems.append("#\(index): body ran \(runs) times") }
                if mustNotRun.contains(index) && runs != 0 { problems.append("#\(index): cancelled before it could start, yet its body ran") }
                if !operation.isCancelled && runs != 1 { problems.append("#\(index): not cancelled, yet its body ran \(runs) times") }
            }
        }
        for (index, operation) in bridgeOperations.enumerated() {
            let runs = bridgeRuns[index].current
            if !operation.isFinished { problems.append("b\(index): not finished") }
            if runs > 1 || (!operation.isCancelled && runs != 1) { problems.append("b\(index): body ran \(runs) times (cancelled: \(operation.isCancelled))") }
            if program.bridgeOps[index].completion && bridgeCompletions[index].current != 1 {
                problems.append("b\(index): completion block ran \(bridgeCompletions[index].current) times")
            }
        }
        for (operation, runs) in extras.withLock({ $0 }) {
            if !operation.isFinished { problems.append("\(operation.name ?? "?"): not finished") }
            if runs.current > 1 || (!operation.isCancelled && runs.current != 1) {
                problems.append("\(operation.name ?? "?"): body ran \(runs.current) times (cancelled: \(operation.isCancelled))")
            }
        }
        return problems
    }
}
