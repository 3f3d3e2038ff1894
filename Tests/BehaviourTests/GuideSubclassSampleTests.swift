// GuideSubclassSampleTests.swift — the two subclass samples of the translated guide chapters
// that are not in OperationTests.swift (SEMANTICS O3, O5, O8, Q2), ported to Swift as literally
// as the language allows:
// - `ZBOperation` (docs/guide/api-overview.zh.md): "asynchronous", yet it does all its work inside
//   start() and finishes there; its setters post will/didChange for every change, so finishing
//   posts isFinished first and then an isExecuting change on an operation already finished.
// - The concurrent subclass of docs/guide/concurrent-subclass-notes.ru.md: isConcurrent, start()
//   checks isCancelled (finishes and returns) or marks itself executing and calls main() between
//   the isExecuting will/did pair; main() polls isCancelled while it works, then posts the nested
//   isFinished/isExecuting pairs. Two of them, each given a parameter object, run in parallel on
//   threads of the queue's, never blocking the thread that added them.
// The Objective-C instance variables are guarded by a lock (accessors must be safe from any thread).
//
// The suite has the process to itself and runs one test at a time: two of its tests need two
// workers running at the same time (their operations meet while running), which another test's
// operations, or each other's, would otherwise hold.
//
// Foundation on Linux has no `isConcurrent`: in the Foundation build the parameter-object sample
// overrides `isAsynchronous` (its successor) instead.
import Testing

/// The guide's `ZBOperation`; `task` stands where the sample says "任务。。。" (the task).
final class ZBOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var storedExecuting = false  // guarded by `lock`
    private var storedFinished = false   // guarded by `lock`
    private let task: @Sendable (ZBOperation) -> Void
    /// Not in the sample: opens as start() returns. ZBOperation finishes (releasing its waiters
    /// and dependents) before it sets `executing = false`, so only then is isExecuting false.
    let startReturned = Latch()

    init(task: @escaping @Sendable (ZBOperation) -> Void = { _ in }) {
        self.task = task
        super.init()
    }

    // The sample synthesises setters for the read-only inherited properties.
    var executing: Bool {
        get { lock.withLock { storedExecuting } }
        set {
            willChangeValue(forKey: "isExecuting")
            lock.withLock { storedExecuting = newValue }
            didChangeValue(forKey: "isExecuting")
        }
    }

    var finished: Bool {
        get { lock.withLock { storedFinished } }
        set {
            if finished != newValue {
                willChangeValue(forKey: "isFinished")
                lock.withLock { storedFinished = newValue }
                didChangeValue(forKey: "isFinished")
            }
        }
    }

    override var isExecuting: Bool { executing }
    override var isFinished: Bool { finished }
    // Returning true marks it as a concurrent operation.
    override var isAsynchronous: Bool { true }

    override func start() {
        defer { startReturned.open() }
        executing = true
        if isCancelled {
            done()
            return
        }
        task(self)
        // The task is done: set the state by hand.
        done()
    }

    func done() {
        finished = true
        executing = false
    }
}

/// The concurrent subclass of concurrent-subclass-notes.ru.md, with its parameter object. `main`
/// records what the sample prints (the parameter, and the thread it runs on) and waits at
/// `rendezvous` (bounded), so a test can see both operations running at once.
final class ParameterOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var executing = false  // guarded by `lock`
    private var finished = false   // guarded by `lock`
    let parameter: Int
    let rendezvous: Latch?
    /// What main() saw: the parameter and its thread, once per loop round that ran.
    let printed = Locked<[(parameter: Int, thread: Int32)]>([])
    let mainRan = Latch()

    init(parameter: Int, rendezvous: Latch? = nil) {
        self.parameter = parameter
        self.rendezvous = rendezvous
        super.init()
    }

    #if BEHAVIOUR_ON_FOUNDATION
    override var isAsynchronous: Bool { true }
    #else
    override var isConcurrent: Bool { true }
    #endif
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        // Cancelled before it started: finish at once, with the KVO notification, and return.
        if isCancelled {
            willChangeValue(forKey: "isFinished")
            lock.withLock { finished = true }
            didChangeValue(forKey: "isFinished")
            return
        }
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true }
        // main() is called from inside start().
        main()
        didChangeValue(forKey: "isExecuting")
    }

    override func main() {
        mainRan.open()
        var taskIsFinished = false
        while !taskIsFinished && !isCancelled {
            // The task: "Parameter Object = …", "Current Thread = …".
            printed.withLock { $0.append((parameter, currentThreadID())) }
            if let rendezvous {
                rendezvous.arrive()
                _ = rendezvous.wait(for: 2, seconds: Deadline.seconds)
            }
            taskIsFinished = true
        }
        willChangeValue(forKey: "isFinished")
        willChangeValue(forKey: "isExecuting")
        lock.withLock {
            finished = true
            executing = false
        }
        didChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
    }
}

@Suite(.needsQuietProcess, .serialized) struct GuideSubclassSampleTests {
    // MARK: - ZBOperation

    @Test func O5_Q2_guideZBOperationInAWidthTwoQueueRunsItsTaskOnAQueueThreadAndFinishes() {
        // The sample's configOperation: a queue of width 2, one ZBOperation.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let taskThread = Locked<Int32>(0)
        let stateInTask = Locked<(executing: Bool, finished: Bool)?>(nil)
        let completions = Counter()
        let operation = ZBOperation { op in
            taskThread.withLock { $0 = currentThreadID() }
            stateInTask.withLock { $0 = (op.isExecuting, op.isFinished) }
        }
        operation.completionBlock = { completions.increment() }
        queue.addOperation(operation)
        guard waitUntilFinished(operation), waitFor(operation.startReturned, "ZBOperation.start() to return") else { return }
        #expect(operation.isFinished && !operation.isExecuting)
        #expect(stateInTask.withLock { $0 }.map { $0.executing && !$0.finished } == true, "\(runtimeUnderTest): executing, not finished, while its task runs")
        #expect(taskThread.withLock { $0 } != 0 && taskThread.withLock { $0 } != currentThreadID())
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(queue.operationCount == 0)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): the completion block ran \(completions.current) times")
    }

    /// Two tasks meet while running, so it needs two workers (two CPUs).
    @Test(.enabled(if: onlineCPUs >= 2))
    func O5_Q2_guideZBOperationsFillAWidthOfTwoAndReleaseTheirDependents() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let gauge = ConcurrencyGauge()
        let bothRunning = Latch()
        let log = Recorder<String>()
        let operations = (0..<6).map { index in
            ZBOperation { _ in
                gauge.enter()
                if index < 2 {  // the first two meet, so the width of 2 is really used
                    bothRunning.arrive()
                    _ = bothRunning.wait(for: 2, seconds: Deadline.seconds)
                }
                log.append("zb \(index)")
                gauge.leave()
            }
        }
        let dependent = loggingOperation("dependent", log)
        for operation in operations { dependent.addDependency(operation) }
        let other = OperationQueue()
        other.addOperation(dependent)
        queue.addOperations(operations, waitUntilFinished: false)
        guard waitUntilFinished(dependent) else { return }
        for operation in operations {
            guard waitFor(operation.startReturned, "ZBOperation.start() to return") else { return }
        }
        #expect(gauge.maximum == 2, "\(runtimeUnderTest): ZBOperations at once in a queue of width 2")
        #expect(bothRunning.arrivals == 2)
        #expect(log.snapshot.last == "dependent" && log.count == 7, "\(runtimeUnderTest): \(log.snapshot)")
        #expect(operations.allSatisfy { $0.isFinished && !$0.isExecuting })
    }

    @Test func O5_O8_guideZBOperationCancelledBeforeItRunsSkipsItsTaskAndFinishes() {
        let queue = OperationQueue()
        let taskRan = Latch()
        let operation = ZBOperation { _ in taskRan.open() }
        operation.cancel()
        let completions = Counter()
        operation.completionBlock = { completions.increment() }
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan, name: "dependent")
        dependent.addDependency(operation)
        queue.addOperations([operation, dependent], waitUntilFinished: false)
        guard waitFor(dependentRan, "the dependent of a cancelled ZBOperation to run") else { return }
        guard waitUntilFinished(operation), waitFor(operation.startReturned, "ZBOperation.start() to return") else { return }
        #expect(!taskRan.isOpen, "\(runtimeUnderTest): the task of a cancelled ZBOperation ran")
        #expect(operation.isCancelled && operation.isFinished && !operation.isExecuting)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): the completion block ran \(completions.current) times")
    }

    @Test func O3_O5_guideZBOperationStartedByHandHasFinishedWhenStartReturns() {
        let taskThread = Locked<Int32>(0)
        let operation = ZBOperation { _ in taskThread.withLock { $0 = currentThreadID() } }
        #expect(operation.isAsynchronous)
        #if !BEHAVIOUR_ON_FOUNDATION
        #expect(operation.isConcurrent)
        #endif
        operation.start()
        #expect(operation.isFinished && !operation.isExecuting)
        #expect(taskThread.withLock { $0 } == currentThreadID(), "\(runtimeUnderTest): ZBOperation's task runs inside start()")
        waitUntilFinished(operation)  // and a wait on it returns
    }

    // MARK: - The concurrent subclass with a parameter object (concurrent-subclass-notes.ru.md)

    /// The two meet while running, so it needs two workers (two CPUs).
    @Test(.enabled(if: onlineCPUs >= 2))
    func O5_guideParameterOperationsRunInParallelOnQueueThreadsWithoutBlockingTheCaller() {
        let queue = OperationQueue()
        let rendezvous = Latch()
        let first = ParameterOperation(parameter: 111, rendezvous: rendezvous)
        let second = ParameterOperation(parameter: 222, rendezvous: rendezvous)
        let completions = Counter()
        for operation in [first, second] { operation.completionBlock = { completions.increment() } }
        queue.addOperation(first)
        queue.addOperation(second)
        // The adding thread goes on at once (the sample's main thread prints while they run).
        let caller = currentThreadID()
        guard waitUntilFinished(first), waitUntilFinished(second) else { return }
        #expect(rendezvous.arrivals == 2, "\(runtimeUnderTest): both operations' main() ran at the same time")
        let printed = first.printed.withLock { $0 } + second.printed.withLock { $0 }
        #expect(printed.map(\.parameter).sorted() == [111, 222])
        #expect(printed.allSatisfy { $0.thread != caller }, "\(runtimeUnderTest): an operation ran on the thread that added it")
        #expect(Set(printed.map(\.thread)).count == 2, "\(runtimeUnderTest): the two did not run on two threads of their own")
        #expect([first, second].allSatisfy { $0.isFinished && !$0.isExecuting })
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(eventually { completions.current == 2 }, "\(runtimeUnderTest): \(completions.current) of 2 completion blocks ran")
    }

    @Test func O5_O8_guideParameterOperationCancelledBeforeStartFinishesWithoutMain() {
        let queue = OperationQueue()
        let operation = ParameterOperation(parameter: 111)
        operation.cancel()
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan)
        dependent.addDependency(operation)
        queue.addOperations([dependent, operation], waitUntilFinished: false)
        guard waitFor(dependentRan, "the dependent of a cancelled parameter operation to run") else { return }
        #expect(operation.isFinished && operation.isCancelled)
        #expect(!operation.mainRan.isOpen, "\(runtimeUnderTest): main() ran for an operation cancelled before it started")
    }

    @Test func O5_guideParameterOperationStartedByHandRunsMainInsideStart() {
        let operation = ParameterOperation(parameter: 222)
        operation.start()
        #expect(operation.isFinished && !operation.isExecuting)
        #expect(operation.printed.withLock { $0 }.map(\.thread) == [currentThreadID()])
    }
}
