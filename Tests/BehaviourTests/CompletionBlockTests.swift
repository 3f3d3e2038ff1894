// CompletionBlockTests.swift — a completion block runs after its operation finished (SEMANTICS
// O7, Apple's contract): `isFinished` reads true, waits on the operation have returned, its
// dependents are released and its queue slot is free, and it runs on another thread, not as part
// of the operation's work. So a completion block may do what Foundation lets it do: take a lock
// that a thread waiting for the operation holds, wait for the next operation of its serial queue,
// wait for its own operation or queue, add to its queue and cancel it (issue 33, item 1: each of
// these hung or trapped when the block ran inside the body, before the finish). Every wait here
// has a deadline: a hang fails the test with a message.
import Testing

/// A synchronous subclass (main() overridden) that records nothing: the general start() path.
final class PlainSubclassOperation: Operation, @unchecked Sendable {
    private let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void = {}) {
        self.work = work
        super.init()
    }
    override func main() { work() }
}

/// An asynchronous subclass that finishes from another thread once started.
final class FinishesLaterOperation: Operation, @unchecked Sendable {
    private let flags = Locked((executing: false, finished: false))
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { flags.withLock { $0.executing } }
    override var isFinished: Bool { flags.withLock { $0.finished } }
    override func start() {
        if isCancelled { return finish() }
        willChangeValue(forKey: "isExecuting")
        flags.withLock { $0.executing = true }
        didChangeValue(forKey: "isExecuting")
        detachThread { self.finish() }
    }
    private func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        flags.withLock { $0 = (executing: false, finished: true) }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// The kinds of operation a completion block may belong to, for the tests that run each.
enum CompletionKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case blockOperation, subclass, asynchronous
    var testDescription: String { rawValue }

    func make(_ work: @escaping @Sendable () -> Void = {}) -> Operation {
        switch self {
        case .blockOperation: BlockOperation(block: work)
        case .subclass: PlainSubclassOperation(work)
        case .asynchronous: FinishesLaterOperation()
        }
    }
}

@Suite(.sharesProcess) struct CompletionBlockTests {
    // A thread holds an NSLock while it waits for an operation whose completion block takes that
    // lock: the wait returns (it does not wait for the block), then the block runs.
    @Test(arguments: CompletionKind.allCases)
    func O7_waitWhileHoldingTheLockTheCompletionBlockTakesReturns(_ kind: CompletionKind) {
        let queue = OperationQueue()
        let lock = NSLock()
        let blockRan = Latch()
        let operation = kind.make()
        operation.completionBlock = {
            lock.lock()
            lock.unlock()
            blockRan.open()
        }
        let waited = onNewThread {
            lock.lock()
            queue.addOperation(operation)
            operation.waitUntilFinished()
            lock.unlock()
        }
        guard waitFor(waited, "waitUntilFinished() of a \(kind) while holding the lock its completion block takes") else { return }
        waitFor(blockRan, "the completion block, once the waiter dropped the lock")
        waitUntilAllOperationsAreFinished(queue)
    }

    // The completion block of a serial queue's operation waits for the queue's next operation:
    // the slot is free when the block runs, so the next one starts.
    @Test(arguments: CompletionKind.allCases)
    func O7_completionBlockOfASerialQueueWaitingForItsNextOperationReturns(_ kind: CompletionKind) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = kind.make()
        let next = BlockOperation {}
        let waited = Latch()
        first.completionBlock = {
            next.waitUntilFinished()
            waited.open()
        }
        queue.addOperation(first)
        queue.addOperation(next)
        waitFor(waited, "the completion block of a \(kind) on a serial queue, waiting for the queue's next operation")
        waitUntilAllOperationsAreFinished(queue)
    }

    // A completion block waits for its own queue and for its own operation: both return, and
    // the operation reads finished there.
    @Test(arguments: CompletionKind.allCases)
    func O7_completionBlockWaitingForItsOwnQueueAndOperationReturns(_ kind: CompletionKind) {
        for width in [1, OperationQueue.defaultMaxConcurrentOperationCount] {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = width
            let operation = kind.make()
            let sawFinished = Locked<Bool?>(nil)
            let done = Latch()
            operation.completionBlock = { [unowned operation] in
                queue.waitUntilAllOperationsAreFinished()
                operation.waitUntilFinished()
                sawFinished.withLock { $0 = operation.isFinished }
                done.open()
            }
            queue.addOperation(operation)
            guard waitFor(done, "the completion block of a \(kind) (width \(width)) waiting for its queue and itself") else { return }
            #expect(sawFinished.withLock { $0 } == true)
            waitUntilFinished(operation)
        }
    }

    // A completion block adds to its own queue, then cancels every operation of it: what it
    // added before the cancel ends cancelled and finished, what it adds after runs. The block
    // cancels once `held` runs (it holds the serial queue until the gate opens), so `cancelled`
    // is surely still waiting when the cancel comes: cancelling an unstarted `held` would let the
    // queue retire it and start `cancelled` between the two cancels, on Foundation as here (the
    // seed of a CI failure on d04a51d, kind asynchronous).
    @Test(arguments: CompletionKind.allCases)
    func O7_completionBlockAddingToAndCancellingItsOwnQueueWorks(_ kind: CompletionKind) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let operation = kind.make()
        let gate = OperationGate()
        let heldRuns = Latch()
        let held = BlockOperation { heldRuns.open(); gate.wait() }
        let cancelled = BlockOperation {}
        let after = BlockOperation {}
        let done = Latch()
        operation.completionBlock = {
            queue.addOperation(held)
            queue.addOperation(cancelled)
            waitFor(heldRuns, "the operation a completion block added to its serial queue to start")
            queue.cancelAllOperations()
            gate.open()
            queue.addOperation(after)
            done.open()
        }
        queue.addOperation(operation)
        guard waitFor(done, "the completion block of a \(kind) that adds to and cancels its queue") else { return }
        for added in [held, cancelled, after] { guard waitUntilFinished(added) else { return } }
        #expect(cancelled.isCancelled && cancelled.isFinished)
        #expect(!after.isCancelled && after.isFinished)
        waitUntilAllOperationsAreFinished(queue)
    }

    // When the block runs, the finish is over: isFinished reads true, the operation is off its
    // queue, a dependent on another queue was released, and the block does not run as part of
    // the operation's work (OperationQueue.current is not the operation's queue).
    @Test(arguments: CompletionKind.allCases)
    func O7_completionBlockRunsAfterTheFinishOutsideTheOperationsWork(_ kind: CompletionKind) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let other = OperationQueue()
        let operation = kind.make()
        let dependentRan = Latch()
        let dependent = BlockOperation { dependentRan.open() }
        dependent.addDependency(operation)
        let seen = Locked<(finished: Bool, executing: Bool, currentIsQueue: Bool, dependentRan: Bool)?>(nil)
        let done = Latch()
        operation.completionBlock = { [unowned operation] in
            // The dependent was released by the finish; it may not have run yet.
            let ran = dependentRan.wait(for: 1, seconds: Deadline.seconds)
            seen.withLock {
                $0 = (operation.isFinished, operation.isExecuting, OperationQueue.current === queue, ran)
            }
            done.open()
        }
        other.addOperation(dependent)
        queue.addOperation(operation)
        guard waitFor(done, "the completion block of a \(kind)") else { return }
        let observed = seen.withLock { $0 }
        #expect(observed?.finished == true && observed?.executing == false, "\(String(describing: observed))")
        #expect(observed?.currentIsQueue == false, "the completion block of a \(kind) ran as part of its queue's work")
        #expect(observed?.dependentRan == true, "the dependent of a \(kind) was not released before its completion block ended")
        waitUntilAllOperationsAreFinished(queue)
        waitUntilAllOperationsAreFinished(other)
    }

    // Exactly once, for operations that run, that are cancelled before they start, and that
    // are started by hand; and the property reads nil afterwards.
    @Test(arguments: CompletionKind.allCases)
    func O7_everyCompletionBlockRunsExactlyOnce(_ kind: CompletionKind) {
        let queue = OperationQueue()
        let runs = Locked(0)
        let count = 200
        var operations: [Operation] = []
        for index in 0..<count {
            let operation = kind.make()
            operation.completionBlock = { runs.withLock { $0 += 1 } }
            if index % 3 == 1 { operation.cancel() }
            operations.append(operation)
        }
        queue.addOperations(operations.enumerated().filter { $0.offset % 3 != 2 }.map(\.element), waitUntilFinished: false)
        for (index, operation) in operations.enumerated() where index % 3 == 2 { operation.start() }
        for operation in operations { guard waitUntilFinished(operation) else { return } }
        #expect(eventually { runs.withLock { $0 } == count }, "\(runs.withLock { $0 }) of \(count) completion blocks ran")
        quietPeriod()
        #expect(runs.withLock { $0 } == count, "a completion block ran twice: \(runs.withLock { $0 }) for \(count)")
        deliberateDifference("Foundation on Linux keeps the block after it ran; Apple sets the property to nil") {
            #expect(operations.allSatisfy { $0.completionBlock == nil })
        }
        waitUntilAllOperationsAreFinished(queue)
    }
}
