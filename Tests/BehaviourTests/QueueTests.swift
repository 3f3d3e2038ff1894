// QueueTests.swift — operation queues (SEMANTICS Q1, Q2, Q4, Q6, Q7, Q8, Q10, Q11, Q13) and
// priorities within a queue (P2): adding, width, suspension, waits, the current queue, QoS, a
// queue's own lifetime, identity and names, queue priorities. (Thread priority and quality of
// service as nice values, P4 and P5, are ours only: Tests/OperationsTests/QueueTests.swift.)
import Testing

/// A queue that opens a latch when it is freed.
final class TrackedQueue: OperationQueue, @unchecked Sendable {
    let freed: Latch
    init(freed: Latch) {
        self.freed = freed
        super.init()
    }
    deinit { freed.open() }
}

/// An operation that, when it runs, adds the next one of a chain to its own queue.
final class SpawningOperation: Operation, @unchecked Sendable {
    let depth: Int
    let maxDepth: Int
    let finished: Counter
    init(depth: Int, maxDepth: Int, finished: Counter) {
        self.depth = depth
        self.maxDepth = maxDepth
        self.finished = finished
        super.init()
    }
    override func main() {
        quietPeriod(0.01)
        if depth < maxDepth, let queue = OperationQueue.current {
            queue.addOperation(SpawningOperation(depth: depth + 1, maxDepth: maxDepth, finished: finished))
        }
        quietPeriod(0.01)
        finished.increment()
    }
}

@Suite(.sharesProcess) struct QueueTests {
    // MARK: - Q1

    @Test func Q1_addOperationAndAddOperationWithAClosureRun() {
        let queue = OperationQueue()
        let ran = Latch()
        queue.addOperation(signallingOperation(ran))
        queue.addOperation { ran.arrive() }
        waitFor(ran, "an added operation and an added closure to run", count: 2)
    }

    @Test func Q1_addOperationsWaitingReturnsOnlyAfterAllFinished() {
        let queue = OperationQueue()
        let counter = Counter()
        let operations = (0..<8).map { index in
            BlockOperation {
                quietPeriod(0.005 * Double(index % 4))
                counter.increment()
            }
        }
        let atReturn = Locked<(count: Int, allFinished: Bool)?>(nil)
        runOnNewThread("addOperations(_:waitUntilFinished: true) to return") {
            queue.addOperations(operations, waitUntilFinished: true)
            atReturn.withLock { $0 = (counter.current, operations.allSatisfy { $0.isFinished }) }
        }
        let seen = atReturn.withLock { $0 }
        #expect(seen?.count == 8, "\(runtimeUnderTest): addOperations(waitUntilFinished: true) returned after \(String(describing: seen?.count)) of 8 bodies")
        #expect(seen?.allFinished == true, "\(runtimeUnderTest)")
    }

    @Test func Q1_addOperationsWithoutWaitingReturnsAndRunsTheBatch() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Latch()
        let operations = (0..<5).map { _ in signallingOperation(ran) }
        queue.addOperations(operations, waitUntilFinished: false)  // returns although nothing can run
        #expect(queue.operationCount == 5, "\(runtimeUnderTest)")
        queue.isSuspended = false
        waitFor(ran, "the batch to run", count: 5)
    }

    // MARK: - Q2

    @Test func Q2_newQueueReportsTheDefaultWidth() {
        let queue = OperationQueue()
        #expect(OperationQueue.defaultMaxConcurrentOperationCount == -1)
        #expect(queue.maxConcurrentOperationCount == OperationQueue.defaultMaxConcurrentOperationCount, "\(runtimeUnderTest)")
        queue.maxConcurrentOperationCount = 3
        #expect(queue.maxConcurrentOperationCount == 3)
        queue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount
        #expect(queue.maxConcurrentOperationCount == -1, "\(runtimeUnderTest)")
    }

    @Test func Q2_widthOneNeverRunsTwoOperationsAtOnce() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gauge = ConcurrencyGauge()
        let operations = (0..<40).map { _ in
            BlockOperation {
                gauge.enter()
                quietPeriod(0.001)
                gauge.leave()
            }
        }
        for operation in operations { queue.addOperation(operation) }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(gauge.maximum == 1, "\(runtimeUnderTest): a width-1 queue ran \(gauge.maximum) operations at once")
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test func Q2_widthTwoNeverRunsMoreThanTwoAsynchronousOperationsUntilTheyPostIsFinished() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let release = Latch()
        let held = [heldMyOperation(release), heldMyOperation(release)]
        let thirdRan = Latch()
        for operation in held { queue.addOperation(operation) }
        queue.addOperation(signallingOperation(thirdRan))
        guard waitFor(held[0].mainStarted, "the first asynchronous operation"),
              waitFor(held[1].mainStarted, "the second asynchronous operation") else { release.open(); return }
        quietPeriod()
        #expect(!thirdRan.isOpen, "\(runtimeUnderTest): a third operation started while two asynchronous ones held both slots")
        release.open()
        waitFor(thirdRan, "the third operation once a slot was freed")
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func Q2_widthZeroStartsNothingUntilRaised() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 0
        let ran = Latch()
        for _ in 0..<3 { queue.addOperation(signallingOperation(ran)) }
        quietPeriod()
        #expect(ran.arrivals == 0, "\(runtimeUnderTest): a width-0 queue started \(ran.arrivals) operations")
        #expect(queue.operationCount == 3)
        queue.maxConcurrentOperationCount = 1
        waitFor(ran, "the waiting operations after raising the width from 0", count: 3)
    }

    @Test func Q2_raisingTheWidthStartsWaitingOperationsAtOnceAndLoweringItStopsNoRunningOne() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = Latch()
        let first = heldMyOperation(release)
        let second = heldMyOperation(release)
        queue.addOperation(first)
        queue.addOperation(second)
        guard waitFor(first.mainStarted, "the first operation") else { release.open(); return }
        quietPeriod()
        #expect(!second.mainStarted.isOpen, "\(runtimeUnderTest)")
        queue.maxConcurrentOperationCount = 2
        guard waitFor(second.mainStarted, "the second operation after raising the width") else { release.open(); return }
        queue.maxConcurrentOperationCount = 1
        quietPeriod()
        #expect(first.isExecuting && second.isExecuting && !first.isCancelled && !second.isCancelled,
                "\(runtimeUnderTest): lowering the width stopped a running operation")
        release.open()
        waitUntilAllOperationsAreFinished(queue)
        #expect(first.isFinished && second.isFinished)
    }

    // MARK: - Q4

    // Q2: a default width is the system's choice, and Apple's runtime counts it per quality of
    // service (each class has its own threads): a userInteractive operation does not wait for
    // the utility work that holds every slot of its queue. Foundation on Linux runs the queue's
    // operations on one pool, where it waits until the utility work ends (W9 "one queue").
    @Test(.tags(.deliberateDifference))
    func Q2_deliberateDifference_aDefaultWidthIsCountedPerQualityOfService() {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        #if BEHAVIOUR_ON_FOUNDATION
        let holders = ProcessInfo.processInfo.activeProcessorCount
        #else
        let holders = OperationsRuntime.topology.defaultWidth
        #endif
        // Spinning, not sleeping: a body asleep in a wait may lend its slot, a spinning one not.
        let started = Latch()
        let released = Latch()
        let stop = Latch()
        defer { stop.open() }
        for _ in 0..<holders {
            queue.addOperation {
                started.open()
                let deadline = DispatchTime.now() + Deadline.seconds
                while stop.arrivals == 0 && DispatchTime.now() < deadline {}
                released.open()
            }
        }
        guard waitFor(started, "\(holders) utility operations to hold the queue's slots", count: holders) else { return }
        let ran = Latch()
        let probe = BlockOperation { ran.open() }
        probe.qualityOfService = .userInteractive
        queue.addOperation(probe)
        deliberateDifference("Foundation on Linux counts a default width over every quality of service") {
            #expect(ran.wait(seconds: Deadline.differenceSeconds),
                    "\(runtimeUnderTest): the userInteractive operation waited for the utility ones holding the width")
            #expect(released.arrivals == 0, "\(runtimeUnderTest): it ran only after a utility operation ended")
        }
        stop.open()
        _ = waitUntilAllOperationsAreFinished(queue)
    }

    @Test func Q4_suspendedQueueStartsNothingUntilResumedAndRunningOperationsGoOn() {
        let queue = OperationQueue()
        #expect(!queue.isSuspended)
        let release = Latch()
        let running = heldMyOperation(release)
        queue.addOperation(running)
        guard waitFor(running.mainStarted, "the running operation") else { release.open(); return }
        queue.isSuspended = true
        #expect(queue.isSuspended)
        let ran = Latch()
        for _ in 0..<3 { queue.addOperation(signallingOperation(ran)) }
        release.open()
        guard waitUntilFinished(running, "the operation that was running when the queue was suspended") else { return }
        quietPeriod()
        #expect(ran.arrivals == 0, "\(runtimeUnderTest): a suspended queue started \(ran.arrivals) operations")
        #expect(queue.operationCount == 3, "\(runtimeUnderTest)")
        queue.isSuspended = false
        #expect(!queue.isSuspended)
        waitFor(ran, "the operations after resuming", count: 3)
    }

    @Test func Q4_operationCancelledWhileItsQueueIsSuspendedStaysCountedUntilResumedThenFinishesWithoutRunning() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let mainRuns = Counter()
        let completions = Counter()
        let operation = BlockOperation { mainRuns.increment() }
        operation.completionBlock = { completions.increment() }
        queue.addOperation(operation)
        operation.cancel()
        quietPeriod()
        #expect(!operation.isFinished, "\(runtimeUnderTest): a cancelled operation of a suspended queue finished before the queue was resumed")
        #expect(queue.operationCount == 1, "\(runtimeUnderTest)")
        #expect(completions.current == 0)
        queue.isSuspended = false
        guard waitUntilFinished(operation) else { return }
        #expect(mainRuns.current == 0)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): completion block ran \(completions.current) times")
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.operationCount == 0)
    }

    // MARK: - Q6

    @Test func Q6_waitUntilAllOperationsAreFinishedAlsoWaitsForOperationsAddedByARunningOperation() {
        let queue = OperationQueue()
        let finished = Counter()
        queue.addOperation(SpawningOperation(depth: 0, maxDepth: 5, finished: finished))
        let countAtReturn = Locked<Int?>(nil)
        runOnNewThread("waitUntilAllOperationsAreFinished() to return") {
            queue.waitUntilAllOperationsAreFinished()
            countAtReturn.withLock { $0 = finished.current }
        }
        #expect(countAtReturn.withLock { $0 } == 6,
                "\(runtimeUnderTest): waitUntilAllOperationsAreFinished() returned after \(String(describing: countAtReturn.withLock { $0 })) of 6 chained operations")
        #expect(queue.operationCount == 0)
    }

    @Test func Q6_waitOnAnEmptyQueueReturnsAtOnce() {
        let queue = OperationQueue()
        waitUntilAllOperationsAreFinished(queue, seconds: 5)
    }

    // MARK: - Q8

    @Test func Q8_currentIsTheQueueRunningTheOperationAndNilElsewhere() {
        let first = OperationQueue()
        first.name = "first"
        let second = OperationQueue()
        second.name = "second"
        let seen = Recorder<String>()
        let a = BlockOperation { seen.append("a:\(OperationQueue.current.map { $0 === first ? "first" : "other" } ?? "nil")") }
        let b = BlockOperation { seen.append("b:\(OperationQueue.current.map { $0 === second ? "second" : "other" } ?? "nil")") }
        first.addOperation(a)
        second.addOperation(b)
        waitUntilFinished(a)
        waitUntilFinished(b)
        #expect(Set(seen.snapshot) == ["a:first", "b:second"], "\(runtimeUnderTest)")

        #expect(OperationQueue.current == nil, "\(runtimeUnderTest): a test's own thread is no queue's")
        let onThread = Locked<Bool?>(nil)
        runOnNewThread("a plain thread") { onThread.withLock { $0 = OperationQueue.current == nil } }
        #expect(onThread.withLock { $0 } == true, "\(runtimeUnderTest)")

        // An operation started by hand on a plain thread has no current queue either.
        let byHandSaw = Locked<Bool?>(nil)
        let byHand = BlockOperation { byHandSaw.withLock { $0 = OperationQueue.current == nil } }
        runOnNewThread("an operation started by hand") { byHand.start() }
        #expect(byHandSaw.withLock { $0 } == true, "\(runtimeUnderTest)")
    }

    // Describing a queue by its name, and nil restoring the default name, are ours.
    @Test(.tags(.deliberateDifference))
    func Q8_deliberateDifference_queuesAreHashableByIdentityAndDescribedByName() {
        let first = OperationQueue()
        let second = OperationQueue()
        #expect(first == first && first != second)
        #expect(Set([first, second, first]).count == 2)
        #expect(first.name?.hasPrefix("NSOperationQueue 0x") == true, "\(runtimeUnderTest)") // Q13
        first.name = "downloads"
        #expect(first.name == "downloads")
        #expect(first.description.contains("OperationQueue"), "\(runtimeUnderTest): \(first.description)")
        deliberateDifference("Foundation on Linux: a queue's description is <Class: address>, without its name") {
            #expect(first.description.contains("\"downloads\""), "\(runtimeUnderTest): \(first.description)")
        }
        first.name = nil
        deliberateDifference("Foundation on Linux: setting name to nil makes it the empty string") {
            #expect(first.name?.hasPrefix("NSOperationQueue 0x") == true, "\(runtimeUnderTest): nil restores the default name")
        }
    }

    // MARK: - Q10

    @Test func Q10_newQueueReportsDefaultQualityOfService() {
        let queue = OperationQueue()
        #expect(queue.qualityOfService == .default)
        queue.qualityOfService = .utility
        #expect(queue.qualityOfService == .utility)
        queue.qualityOfService = .userInteractive
        #expect(queue.qualityOfService == .userInteractive)
        #expect(BlockOperation().qualityOfService == .default)
        #if !BEHAVIOUR_ON_FOUNDATION
        // Foundation on Linux has no threadPriority (Apple's has).
        #expect(BlockOperation().threadPriority == 0.5)
        #endif
        #expect(BlockOperation().queuePriority == .normal)
    }

    // MARK: - Q11

    @Test func Q11_droppingTheLastReferenceToABusyQueueDoesNotStopItsWork() {
        let count = 1000
        let completed = Latch()
        let bodies = Counter()
        let freed = Latch()
        let sawLiveQueue = Counter()
        do {
            let queue = TrackedQueue(freed: freed)
            for _ in 0..<count {
                let operation = BlockOperation {
                    bodies.increment()
                    if OperationQueue.current != nil { sawLiveQueue.increment() }
                }
                operation.completionBlock = { completed.arrive() }
                queue.addOperation(operation)
            }
        }
        guard waitFor(completed, "the completion blocks of \(count) operations of a dropped queue", count: count) else {
            Issue.record("\(runtimeUnderTest): bodies run: \(bodies.current)")
            return
        }
        #expect(bodies.current == count)
        #expect(sawLiveQueue.current == count, "\(runtimeUnderTest)")
        waitFor(freed, "the dropped queue to be freed after its last operation finished")
    }

    @Test func Q11_queueDroppedWhileSuspendedWorkIsHeldIsFreedAfterItsLastOperationFinished() {
        let freed = Latch()
        let release = Latch()
        let operation = heldMyOperation(release)
        do {
            let queue = TrackedQueue(freed: freed)
            queue.addOperation(operation)
        }
        guard waitFor(operation.mainStarted, "the operation of a dropped queue to start") else { release.open(); return }
        quietPeriod()
        #expect(!freed.isOpen, "\(runtimeUnderTest): a queue was freed while it still held an unfinished operation")
        release.open()
        waitFor(freed, "the queue to be freed after its last operation finished")
    }

    @Test func Q11_droppedQueueOfAsynchronousOperationsFinishesThemAll() {
        let count = 100
        let completed = Latch()
        let freed = Latch()
        do {
            let queue = TrackedQueue(freed: freed)
            queue.maxConcurrentOperationCount = 4
            for _ in 0..<count {
                let operation = MyOperation()
                operation.completionBlock = { completed.arrive() }
                queue.addOperation(operation)
            }
        }
        waitFor(completed, "the completion blocks of \(count) asynchronous operations of a dropped queue", count: count)
        waitFor(freed, "the dropped queue to be freed")
    }

    // MARK: - P2

    private static let priorities: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]

    @Test func P2_serialQueueStartsHigherPriorityFirstAndFIFOWithinAPriority() {
        var random = SeededGenerator("P2_serialQueueStartsHigherPriorityFirstAndFIFOWithinAPriority")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<Int>()
        let assigned = (0..<30).map { _ in Self.priorities.randomElement(using: &random)! }
        let operations = assigned.enumerated().map { index, priority in
            let operation = BlockOperation { log.append(index) }
            operation.queuePriority = priority
            return operation
        }
        for operation in operations { queue.addOperation(operation) }
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        // Stable sort: higher priority first, order of addition within a priority.
        let expected = assigned.indices.sorted { lhs, rhs in
            assigned[lhs].rawValue != assigned[rhs].rawValue ? assigned[lhs].rawValue > assigned[rhs].rawValue : lhs < rhs
        }
        #expect(log.snapshot == expected, "\(runtimeUnderTest): priorities by index: \(assigned.map(\.rawValue)) (seed \(random.seed))")
    }

    @Test func P2_veryHighStartsBeforeEarlierAddedNormalAndLowOnes() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<String>()
        let names: [(String, Operation.QueuePriority)] = [("low", .low), ("normal1", .normal), ("veryHigh1", .veryHigh),
                                                          ("normal2", .normal), ("veryHigh2", .veryHigh), ("veryLow", .veryLow), ("high", .high)]
        for (name, priority) in names {
            let operation = loggingOperation(name, log)
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(log.snapshot == ["veryHigh1", "veryHigh2", "high", "normal1", "normal2", "low", "veryLow"], "\(runtimeUnderTest)")
    }

    @Test func P2_readinessComesBeforePriority() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<String>()
        let blocker = BlockOperation {}
        let high = loggingOperation("veryHigh, not ready", log)
        high.queuePriority = .veryHigh
        high.addDependency(blocker)
        let low = loggingOperation("veryLow, ready", log)
        low.queuePriority = .veryLow
        queue.addOperation(high)
        queue.addOperation(low)
        queue.isSuspended = false
        defer { blocker.start() }  // on any path: `high` (in the queue) waits for it
        guard waitUntilFinished(low) else { return }
        quietPeriod()
        #expect(log.snapshot == ["veryLow, ready"], "\(runtimeUnderTest)")
        blocker.start()
        guard waitUntilFinished(high) else { return }
        #expect(log.snapshot == ["veryLow, ready", "veryHigh, not ready"], "\(runtimeUnderTest)")
    }

    @Test func Q7_P2_batchAddedToARunningSerialQueueStartsInPriorityOrder() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = Recorder<String>()
        let batch: [(String, Operation.QueuePriority)] = [("low", .low), ("normal", .normal), ("veryHigh", .veryHigh), ("high", .high)]
        let operations = batch.map { name, priority in
            let operation = loggingOperation(name, log)
            operation.queuePriority = priority
            return operation
        }
        queue.addOperations(operations, waitUntilFinished: false)
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(log.snapshot == ["veryHigh", "high", "normal", "low"], "\(runtimeUnderTest)")
    }

    @Test func Q7_changingThePriorityOfAWaitingOperationMovesItToTheBackOfItsNewLevel() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<String>()
        let added: [(String, Operation.QueuePriority)] = [("A", .normal), ("B", .high), ("C", .high), ("D", .normal)]
        let operations = added.map { name, priority in
            let operation = loggingOperation(name, log)
            operation.queuePriority = priority
            queue.addOperation(operation)
            return operation
        }
        operations[0].queuePriority = .high // A: behind B and C, which were high before it
        operations[2].queuePriority = .low  // C: behind everything normal
        operations[3].queuePriority = .normal // unchanged: D keeps its place
        #expect(operations[0].queuePriority == .high)
        #expect(operations[2].queuePriority == .low)
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(log.snapshot == ["B", "A", "D", "C"], "\(runtimeUnderTest)")
    }

    @Test func Q7_anOperationReprioritisedManyTimesWhileWaitingRunsExactlyOnce() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<String>()
        let levels: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let operations = (0..<8).map { index in
            let operation = loggingOperation("op\(index)", log)
            queue.addOperation(operation)
            return operation
        }
        // 40 changes each: more than the core's 16 entry generations wrap around.
        for round in 0..<40 {
            for (index, operation) in operations.enumerated() {
                operation.queuePriority = levels[(round + index) % levels.count]
            }
        }
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(log.snapshot.sorted() == (0..<8).map { "op\($0)" }.sorted(), "\(runtimeUnderTest): every operation ran exactly once")
    }
}

/// Queues dropped while their operations run, so each is freed the moment it goes idle, while
/// the threads that finished its last operations may still be tidying its list of operations
/// (CI runs this suite under AddressSanitizer too).
@Suite(.sharesProcess) struct QueueLifetimeTests {
    @Test func Q11_queuesFreedTheMomentTheyGoIdleWhileWorkersTidyTheirListsStaySound() {
        let rounds = 30
        let count = 3000
        for round in 0..<rounds {
            let ran = Latch()
            let freed = Latch()
            do {
                let queue = TrackedQueue(freed: freed)
                for _ in 0..<count { queue.addOperation(BlockOperation { ran.arrive() }) }
            }
            guard waitFor(ran, "round \(round): the \(count) operations of a dropped queue", count: count),
                  waitFor(freed, "round \(round): the dropped queue to be freed")
            else { return }
        }
    }
}
