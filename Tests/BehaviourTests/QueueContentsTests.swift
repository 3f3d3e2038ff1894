// QueueContentsTests.swift — what a queue holds (SEMANTICS Q5, Q7, Q9, Q12): `operations` and
// `operationCount`, `cancelAllOperations()`, barrier blocks, and operations being freed after
// they finished.
import Testing

/// An operation that opens a latch when it is freed.
final class FreedOperation: Operation, @unchecked Sendable {
    let freed: Latch
    init(freed: Latch) {
        self.freed = freed
        super.init()
    }
    deinit { freed.open() }
}

@Suite(.sharesProcess)
struct QueueContentsTests {
    @Test func Q7_operationsListsUnfinishedOperationsInTheOrderTheyWereAdded() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let added = (0..<50).map { index -> BlockOperation in
            let operation = BlockOperation {}
            operation.name = "op\(index)"
            return operation
        }
        for operation in added { queue.addOperation(operation) }
        #expect(queue.operations == added, "\(runtimeUnderTest): operations must list what was added, in order")
        #expect(queue.operationCount == 50)
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(queue.operations.isEmpty)
        #expect(queue.operationCount == 0)
    }

    @Test func Q5_cancelAllOperationsCancelsEveryOperationAndNoneRuns() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Counter()
        let completions = Counter()
        let operations = (0..<20).map { _ -> BlockOperation in
            let operation = BlockOperation { ran.increment() }
            operation.completionBlock = { completions.increment() }
            return operation
        }
        queue.addOperations(operations, waitUntilFinished: false)
        queue.cancelAllOperations()
        #expect(operations.allSatisfy { $0.isCancelled }, "\(runtimeUnderTest): every operation in the queue is cancelled")
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(ran.current == 0, "\(runtimeUnderTest): a cancelled operation ran its block")
        // Completion blocks run after the finish, maybe on another thread: a waiter may return first.
        #expect(eventually { completions.current == 20 }, "\(runtimeUnderTest): every completion block runs once, also when cancelled (O7): \(completions.current) of 20")
        #expect(operations.allSatisfy { $0.isFinished })
    }

    /// cancelAllOperations cancels every operation added before it, also while another thread
    /// keeps adding: added operations used to push the oldest ones out of the queue's snapshot,
    /// and those then ran instead of ending cancelled.
    @Test func Q5_cancelAllOperationsWhileAnotherThreadAddsCancelsEveryEarlierOperation() {
        for trial in 0..<5 {
            let queue = OperationQueue()
            queue.isSuspended = true
            let earlier = (0..<100).map { _ in BlockOperation {} }
            queue.addOperations(earlier, waitUntilFinished: false)
            let addedSoFar = Counter()
            let adding = onNewThread {
                for _ in 0..<20_000 {
                    queue.addOperation {}
                    addedSoFar.increment()
                }
            }
            // One call, made while the other thread is well into adding (a long queue makes
            // the snapshot slow, so additions land during it).
            while addedSoFar.current < 5_000 && !adding.isOpen {}
            queue.cancelAllOperations()
            guard waitFor(adding, "the adding thread") else { return }
            let missed = earlier.filter { !$0.isCancelled }.count
            #expect(missed == 0, "\(runtimeUnderTest): trial \(trial): cancelAllOperations missed \(missed) of the 100 operations added before it")
            queue.isSuspended = false
            guard waitUntilAllOperationsAreFinished(queue) else { return }
        }
    }

    @Test func Q9_aBarrierRunsAfterEverythingBeforeItAndBeforeEverythingAfterIt() {
        let queue = OperationQueue()
        let log = Recorder<String>()
        let before = (0..<30).map { loggingOperation("before\($0)", log) }
        let after = (0..<30).map { loggingOperation("after\($0)", log) }
        for operation in before { queue.addOperation(operation) }
        queue.addBarrierBlock { log.append("barrier") }
        for operation in after { queue.addOperation(operation) }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        let entries = log.snapshot
        guard let barrier = entries.firstIndex(of: "barrier") else {
            Issue.record("\(runtimeUnderTest): the barrier block did not run: \(entries)")
            return
        }
        #expect(entries[..<barrier].allSatisfy { $0.hasPrefix("before") }, "\(runtimeUnderTest): \(entries)")
        #expect(entries[(barrier + 1)...].allSatisfy { $0.hasPrefix("after") }, "\(runtimeUnderTest): \(entries)")
        #expect(entries.count == 61)
    }

    // Regression: a barrier registered itself only after its lock was dropped and then waited
    // on whichever barrier was newest; with barriers added from several threads, operations
    // passed a barrier of their own thread and barriers waited for each other in a cycle.
    @Test func Q9_barriersAddedFromSeveralThreadsAtOnceEachKeepTheirThreadsOrder() {
        let queue = OperationQueue()
        let log = Recorder<String>()
        let threads = 3, runs = 15, perRun = 4
        let done = (0..<threads).map { thread in
            onNewThread {
                for run in 0..<runs {
                    for item in 0..<perRun { queue.addOperation { log.append("\(thread) op \(run) \(item)") } }
                    queue.addBarrierBlock { log.append("\(thread) barrier \(run)") }
                }
            }
        }
        for latch in done { guard waitFor(latch, "a thread adding operations and barriers") else { return } }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        let entries = log.snapshot
        #expect(entries.count == threads * runs * (perRun + 1), "\(runtimeUnderTest): every operation and barrier ran once")
        for thread in 0..<threads {
            // In this thread's own entries, run r's barrier comes after its run-r operations and
            // before its run r+1 operations.
            let mine = entries.filter { $0.hasPrefix("\(thread) ") }.map { $0.split(separator: " ") }
            var expectedRun = 0, seenInRun = 0
            for entry in mine {
                let run = Int(entry[2]) ?? -1
                if entry[1] == "barrier" {
                    #expect(run == expectedRun && seenInRun == perRun,
                            "\(runtimeUnderTest): thread \(thread): barrier \(run) ran after \(seenInRun) of run \(expectedRun)'s operations: \(mine)")
                    expectedRun += 1
                    seenInRun = 0
                } else {
                    #expect(run == expectedRun, "\(runtimeUnderTest): thread \(thread): an operation of run \(run) ran in run \(expectedRun): \(mine)")
                    seenInRun += 1
                }
            }
        }
    }

    @Test func Q7_Q12_barriersAreNotListedAndWaitsIncludeThem() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Counter()
        let operation = BlockOperation {}
        queue.addOperation(operation)
        queue.addBarrierBlock { ran.increment() }
        #expect(queue.operations == [operation], "\(runtimeUnderTest): barrier blocks are not listed")
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(ran.current == 1, "\(runtimeUnderTest): waitUntilAllOperationsAreFinished returns after the barrier ran")
    }

    #if !BEHAVIOUR_ON_FOUNDATION
    // Not on Foundation: it crashes Foundation on Linux now and then (SIGSEGV in
    // Operation.observeValue, 2 of 42 runs of the whole target). cancelAllOperations() cancels the
    // barrier, which Foundation makes a dependent of every operation in the queue; the cancelled
    // barrier retires at once and is freed, while the operation before it, not yet finished,
    // still lists it (unretained) as a dependent: that operation's finish follows the dangling
    // pointer. An operation slow to start (a preempted thread) makes it crash every time.
    @Test func Q12_cancelAllOperationsCancelsABarrierThatHasNotRun() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let barrierRan = Counter()
        queue.addOperation(BlockOperation {})
        queue.addBarrierBlock { barrierRan.increment() }
        queue.cancelAllOperations()
        let later = Counter()
        queue.addOperation { later.increment() }
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(barrierRan.current == 0, "\(runtimeUnderTest): a cancelled barrier's block never runs")
        #expect(later.current == 1, "\(runtimeUnderTest): operations added after cancelAllOperations still run")
    }
    #endif

    @Test func Q11_finishedOperationsAreFreedOnceTheQueueIsIdle() {
        let queue = OperationQueue()
        let freed = Latch()
        do {
            for _ in 0..<10 { queue.addOperation(FreedOperation(freed: freed)) }
        }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        waitFor(freed, "the 10 finished operations to be freed", count: 10)
    }
}
