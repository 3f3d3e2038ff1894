// PlainRunTests.swift — the queue's fast path for a plain BlockOperation
// (Operation+PlainRun.swift): it must look exactly like start() → main() → finish to everything
// a user can see, and hand over to the general path when something appears mid-run (an
// observer, a completion block) or the operation is not plain (a subclass, a cancelled one).
import Foundation
import Operations
import Testing

@Suite(.sharesProcess) struct PlainRunTests {
    @Test func O2_plainBlockOperationIsExecutingWhileItsBlockRunsAndFinishedAfter() {
        let queue = Operations.OperationQueue()
        let seen = Locked<(executing: Bool, finished: Bool, current: Bool)?>(nil)
        let box = Locked<Operations.Operation?>(nil)
        let operation = Operations.BlockOperation {
            let operation = box.withLock { $0 }!
            seen.withLock {
                $0 = (operation.isExecuting, operation.isFinished, Operations.OperationQueue.current === queue)
            }
        }
        box.withLock { $0 = operation }
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        let inside = seen.withLock { $0 }
        #expect(inside?.executing == true, "isExecuting was false inside the block")
        #expect(inside?.finished == false, "isFinished was true inside the block")
        #expect(inside?.current == true, "OperationQueue.current was not the queue inside the block")
        #expect(operation.isFinished && !operation.isExecuting)
        box.withLock { $0 = nil }
    }

    @Test func O7_completionBlockSetWhileTheBlockRunsRunsOnceAfterItFinished() {
        let queue = Operations.OperationQueue()
        let runs = Counter()
        let sawFinished = Locked<Bool?>(nil)
        let box = Locked<Operations.Operation?>(nil)
        let operation = Operations.BlockOperation {
            let operation = box.withLock { $0 }!
            operation.completionBlock = { [unowned operation] in
                sawFinished.withLock { $0 = operation.isFinished }
                runs.increment()
            }
        }
        box.withLock { $0 = operation }
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        // The completion block runs after the finish, on a thread of its own.
        #expect(eventually { runs.current == 1 }, "the completion block set mid-run ran \(runs.current) times")
        quietPeriod()
        #expect(runs.current == 1, "the completion block set mid-run ran \(runs.current) times")
        #expect(sawFinished.withLock { $0 } == true)
        #expect(operation.completionBlock == nil)
        box.withLock { $0 = nil }
    }

    @Test func O4_observerAddedWhileTheBlockRunsSeesTheFinish() {
        let queue = Operations.OperationQueue()
        let calls = Recorder<Bool>()
        let token = Locked<OperationObservation?>(nil)
        let box = Locked<Operations.Operation?>(nil)
        let operation = Operations.BlockOperation {
            let operation = box.withLock { $0 }!
            let observation = operation.observe(.isFinished) { calls.append($0.isFinished) }
            token.withLock { $0 = observation }
        }
        box.withLock { $0 = operation }
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(calls.snapshot == [true], "an observer added mid-run saw \(calls.snapshot)")
        token.withLock { $0 = nil }
        box.withLock { $0 = nil }
    }

    /// The fast path holds no reference of its own: when the queue's is the last one, an
    /// operation whose block sets its completion block must still finish, run that block once,
    /// and be freed (run under AddressSanitizer in CI).
    @Test func O7_completionBlocksSetMidRunWhenOnlyTheQueueHoldsTheOperationRunOnceAndAllAreFreed() {
        final class WeakBox: @unchecked Sendable { weak var operation: Operations.Operation? }
        let queue = Operations.OperationQueue()
        let completions = Counter()
        let count = 2000
        var boxes: [WeakBox] = []
        for _ in 0..<count {
            let box = WeakBox()
            let operation = Operations.BlockOperation { [box] in
                box.operation?.completionBlock = { completions.increment() }
            }
            box.operation = operation
            boxes.append(box)
            queue.addOperation(operation)
        }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        // Completion blocks run after their operations' finish, each holding its operation until
        // it returned; the queue released its own references before the wait returned.
        #expect(eventually { completions.current == count }, "\(completions.current) of \(count) completion blocks ran")
        #expect(eventually { boxes.allSatisfy { $0.operation == nil } },
                "\(boxes.filter { $0.operation != nil }.count) operations are still alive after the queue finished them and their completion blocks ran")
    }

    /// A subclass is never plain: it may override the KVO calls, and gets all of them.
    final class RecordingBlockOperation: Operations.BlockOperation, @unchecked Sendable {
        let keys = Recorder<String>()
        override func didChangeValue(forKey key: String) {
            keys.append(key)
            super.didChangeValue(forKey: key)
        }
    }

    @Test func O4_subclassOfBlockOperationStillGetsEveryKVOCallInAQueue() {
        let queue = Operations.OperationQueue()
        let operation = RecordingBlockOperation()
        operation.addExecutionBlock {}
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        let keys = operation.keys.snapshot
        #expect(keys == ["isExecuting", "isExecuting", "isFinished"], "the subclass saw \(keys)")
    }

    @Test func O8_cancelledPlainBlockOperationEndsWithoutRunningItsBlock() {
        let queue = Operations.OperationQueue()
        queue.isSuspended = true
        let ran = Counter()
        let completions = Counter()
        let operation = Operations.BlockOperation { ran.increment() }
        operation.completionBlock = { completions.increment() }
        queue.addOperation(operation)
        operation.cancel()
        queue.isSuspended = false
        guard waitUntilFinished(operation) else { return }
        #expect(eventually { completions.current == 1 }, "the completion block of the cancelled operation did not run")
        #expect(ran.current == 0 && completions.current == 1 && operation.isCancelled && operation.isFinished)
    }

    // start() by hand on a plain BlockOperation takes the fast path too: the same states inside
    // and after the block, no queue, and a dependent on another thread released by its finish.
    @Test func O2_plainBlockOperationStartedByHandIsExecutingWhileItsBlockRunsAndFinishedAfter() {
        let seen = Locked<(executing: Bool, finished: Bool, started: Bool, noQueue: Bool)?>(nil)
        let box = Locked<Operations.Operation?>(nil)
        let operation = Operations.BlockOperation {
            let operation = box.withLock { $0 }!
            seen.withLock {
                $0 = (operation.isExecuting, operation.isFinished, true, Operations.OperationQueue.current == nil)
            }
        }
        box.withLock { $0 = operation }
        let queue = Operations.OperationQueue()
        let dependent = Operations.BlockOperation {}
        dependent.addDependency(operation)
        queue.addOperation(dependent)
        operation.start()
        let inside = seen.withLock { $0 }
        #expect(inside?.started == true, "the block did not run")
        #expect(inside?.executing == true, "isExecuting was false inside the block")
        #expect(inside?.finished == false, "isFinished was true inside the block")
        #expect(inside?.noQueue == true, "OperationQueue.current was a queue inside a block started by hand")
        #expect(operation.isFinished && !operation.isExecuting && !operation.isCancelled)
        guard waitUntilFinished(dependent) else { return }
        operation.start() // finished: does nothing
        #expect(operation.isFinished)
        box.withLock { $0 = nil }
    }

    // A plain BlockOperation started by hand with a completion block, an observer or a
    // cancellation takes the general path: each is seen as from start().
    @Test func O4_O7_O8_plainBlockOperationStartedByHandWithRareFeaturesBehavesAsStart() {
        let ran = Counter()
        let completions = Counter()
        let withCompletion = Operations.BlockOperation { ran.increment() }
        withCompletion.completionBlock = { completions.increment() }
        withCompletion.start()
        let observed = Operations.BlockOperation { ran.increment() }
        let calls = Recorder<Bool>()
        let token = observed.observe(.isFinished) { calls.append($0.isFinished) }
        observed.start()
        let cancelled = Operations.BlockOperation { ran.increment() }
        cancelled.cancel()
        cancelled.start()
        #expect(eventually { completions.current == 1 }, "the completion block did not run")
        #expect(ran.current == 2 && completions.current == 1)
        #expect(calls.snapshot == [true])
        #expect(withCompletion.isFinished && observed.isFinished && cancelled.isFinished && cancelled.isCancelled)
        token.invalidate()
    }

    @Test func D1_plainOperationsReleaseTheirDependentsAcrossQueues() {
        let first = Operations.OperationQueue()
        let second = Operations.OperationQueue()
        let log = Recorder<String>()
        let a = Operations.BlockOperation { log.append("a") }
        let b = Operations.BlockOperation { log.append("b") }
        b.addDependency(a)
        second.addOperation(b)
        first.addOperation(a)
        guard waitUntilFinished(b) else { return }
        #expect(log.snapshot == ["a", "b"])
    }
}
