// QueueProgressTests.swift — `OperationQueue.progress` (issue 22, item 3), with Apple's
// documented semantics: the queue reports nothing until the progress's totalUnitCount is set;
// from then on each operation that finishes by the end of its main() adds one unit of
// completion; operations that override start() without calling super, cancelled operations
// (main never runs) and barrier blocks add none. Compiled outside the module, against
// Operations and against Foundation (whose progress is racy on a concurrent queue: the shared
// tests use serial queues; counting on a concurrent queue is checked on Operations only).
import Testing

/// Overrides start() and never calls super: finishes there, by its own flags.
final class StartWithoutSuperOperation: Operation, @unchecked Sendable {
    private let flags = Locked((executing: false, finished: false))
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { flags.withLock { $0.executing } }
    override var isFinished: Bool { flags.withLock { $0.finished } }

    override func start() {
        willChangeValue(forKey: "isFinished")
        flags.withLock { $0 = (false, true) }
        didChangeValue(forKey: "isFinished")
    }
}

@Suite(.sharesProcess) struct QueueProgressTests {
    @Test func aQueueReportsNoProgressUntilItsTotalUnitCountIsSet() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        #expect(queue.progress === queue.progress, "\(runtimeUnderTest): progress is not one object")
        #expect(queue.progress.totalUnitCount == 0 && queue.progress.completedUnitCount == 0)
        for _ in 0..<3 { queue.addOperation {} }
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.progress.completedUnitCount == 0,
                "\(runtimeUnderTest): \(queue.progress.completedUnitCount) units counted before totalUnitCount was set")
    }

    @Test func eachOperationFinishedByTheEndOfMainCountsOneUnit() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.progress.totalUnitCount = 4
        queue.addOperation {}                                     // a block
        queue.addOperation(BlockOperation {})                     // a BlockOperation
        queue.addOperations([BlockOperation {}, BlockOperation {}], waitUntilFinished: false)
        waitUntilAllOperationsAreFinished(queue)
        // Counted before each operation finished: the wait's return sees every unit.
        #expect(queue.progress.completedUnitCount == 4, "\(runtimeUnderTest): \(queue.progress.completedUnitCount) of 4 units")
        #expect(queue.progress.fractionCompleted == 1)
        #expect(queue.progress.isFinished)
    }

    @Test func barriersCancelledOperationsAndStartWithoutSuperCountNothing() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.progress.totalUnitCount = 10
        let gate = OperationGate()
        queue.addOperation { gate.wait() }                        // counts
        let cancelled = BlockOperation {}
        queue.addOperation(cancelled)
        cancelled.cancel()                                        // main never runs
        queue.addBarrierBlock {}                                  // a barrier
        queue.addOperation(StartWithoutSuperOperation())          // start() without super
        gate.open()
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.progress.completedUnitCount == 1, "\(runtimeUnderTest): \(queue.progress.completedUnitCount) units, expected 1")
        #expect(queue.progress.fractionCompleted == 0.1)
    }

    @Test func totalUnitCountSetFromABarrierCountsWhatFollows() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.addOperation {}                                     // before reporting: not counted
        queue.addBarrierBlock { queue.progress.totalUnitCount = 2 }
        queue.addOperation {}
        queue.addOperation {}
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.progress.completedUnitCount == 2, "\(runtimeUnderTest): \(queue.progress.completedUnitCount) of 2 units")
    }

    #if !BEHAVIOUR_ON_FOUNDATION
    // Foundation on Linux updates the queue's Progress from every worker with no lock (units
    // are lost, and its children set is mutated concurrently); ours counts under one.
    @Test func addition_operationsOfAConcurrentQueueAreCountedExactly() {
        let queue = OperationQueue()
        let count = 400
        queue.progress.totalUnitCount = Int64(count)
        for _ in 0..<count { queue.addOperation { _ = queue.progress.completedUnitCount } }
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.progress.completedUnitCount == Int64(count))
    }

    @Test func addition_aTaskOperationCountsWhenItsBodyReturns() async {
        let queue = OperationQueue()
        queue.progress.totalUnitCount = 2
        queue.addTaskOperation { await Task.yield() }
        queue.addTaskOperation { throw CancellationError() }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(queue.progress.completedUnitCount == 2)
    }
    #endif
}
