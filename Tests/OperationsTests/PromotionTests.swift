// PromotionTests.swift — QoS promotion at the Swift layer (issue 23 part 2): an operation that
// higher-QoS work waits for or depends on runs at that QoS, reports it in
// `promotedQualityOfService`, and shows the raised nice value inside its work. Not a behaviour
// test: Foundation has no `promotedQualityOfService` (and on Linux no promotion).
//
// The suite has the process to itself (.needsQuietProcess): it reads nice values of bodies.
import Operations
import OperationsCore
import Testing

@Suite(.needsQuietProcess, .serialized) struct PromotionTests {
    /// A background operation held behind another on a serial queue, that a userInteractive
    /// operation depends on, runs at userInteractive's nice value and reports the promotion;
    /// the dependent reports none, and an unrelated operation stays unpromoted.
    /// A serial background queue whose only slot a running operation holds until `gate` opens:
    /// what is added to it next waits, queued.
    private func heldSerialBackgroundQueue() -> (queue: OperationQueue, gate: Latch) {
        let low = OperationQueue()
        low.qualityOfService = .background
        low.maxConcurrentOperationCount = 1
        let gate = Latch(), holding = Latch()
        low.addOperation {
            holding.arrive()
            _ = gate.wait(seconds: Limits.waitSeconds)
        }
        #expect(holding.wait(seconds: Limits.waitSeconds), "the holder never started")
        return (low, gate)
    }

    @Test func dependencyOfHigherQoSOperationRunsAtItsQoS() {
        let (low, gate) = heldSerialBackgroundQueue()
        let high = OperationQueue()
        high.qualityOfService = .userInteractive
        let seen = Locked<Int32>(Int32.min)
        let dependency = BlockOperation { seen.withLock { $0 = threadNice() } }
        dependency.qualityOfService = .background
        let unrelated = BlockOperation {}
        low.addOperation(dependency)
        low.addOperation(unrelated)
        #expect(dependency.promotedQualityOfService == nil)
        let dependent = BlockOperation {}
        dependent.addDependency(dependency)
        high.addOperation(dependent)
        #expect(dependency.promotedQualityOfService == .userInteractive)
        gate.open()
        dependent.waitUntilFinished()
        low.waitUntilAllOperationsAreFinished()
        #expect(seen.withLock { $0 } == expectedNice(.userInteractive),
                "the promoted dependency ran at nice \(seen.withLock { $0 })")
        #expect(dependency.promotedQualityOfService == .userInteractive, "still reported after it finished")
        #expect(dependent.promotedQualityOfService == nil)
    }

    /// Issue 33, item 6: a promoted operation with a thread priority runs main() at the promoted
    /// class's nice value moved by its thread priority, not at its own class's (start() applied
    /// the unpromoted class: where the process may renice, the body ran at background's nice plus
    /// the delta).
    @Test(arguments: [1.0, 0.25])
    func aPromotedOperationWithAThreadPriorityRunsMainAtThePromotedClass(_ threadPriority: Double) {
        let (low, gate) = heldSerialBackgroundQueue()
        let high = OperationQueue()
        high.qualityOfService = .userInteractive
        let seen = Locked<Int32>(Int32.min)
        let dependency = BlockOperation { seen.withLock { $0 = threadNice() } }
        dependency.threadPriority = threadPriority
        low.addOperation(dependency)
        let dependent = BlockOperation {}
        dependent.addDependency(dependency)
        high.addOperation(dependent)
        #expect(dependency.promotedQualityOfService == .userInteractive)
        gate.open()
        dependent.waitUntilFinished()
        low.waitUntilAllOperationsAreFinished()
        let expected = max(op_runtime_nice_for(OP_QOS_USER_INTERACTIVE, threadPriority), op_runtime_nice_floor())
        #expect(seen.withLock { $0 } == expected,
                "the promoted dependency with thread priority \(threadPriority) ran main() at nice \(seen.withLock { $0 }), not \(expected)")
    }

    /// On one serial background queue held by a running operation: a dependency with no QoS of
    /// its own runs at the queue's class already, so a dependent added at that class raises
    /// nothing (the Swift layer skips it without asking the core); a dependent with a higher QoS
    /// of its own, or a dependency whose own QoS is lower than the queue's, is raised.
    @Test func dependenciesOnTheSameQueueAreRaisedOnlyAboveWhatTheyRunAt() {
        let (low, gate) = heldSerialBackgroundQueue()
        let plain = BlockOperation {}
        let plainDependent = BlockOperation {}
        plainDependent.addDependency(plain)
        low.addOperation(plain)
        low.addOperation(plainDependent)
        #expect(plain.promotedQualityOfService == nil, "raised to the class it runs at already")

        let forHigher = BlockOperation {}
        let higherDependent = BlockOperation {}
        higherDependent.qualityOfService = .userInitiated
        higherDependent.addDependency(forHigher)
        low.addOperation(forHigher)
        low.addOperation(higherDependent)
        #expect(forHigher.promotedQualityOfService == .userInitiated, "a dependent above the queue's class raises it")

        let utilityQueue = OperationQueue()
        utilityQueue.qualityOfService = .utility
        utilityQueue.isSuspended = true
        let ownLower = BlockOperation {}
        ownLower.qualityOfService = .background
        let utilityDependent = BlockOperation {}
        utilityDependent.addDependency(ownLower)
        utilityQueue.addOperation(ownLower)
        utilityQueue.addOperation(utilityDependent)
        #expect(ownLower.promotedQualityOfService == .utility, "its own QoS is below the queue's: raised to it")
        utilityQueue.isSuspended = false
        gate.open()
        low.waitUntilAllOperationsAreFinished()
        utilityQueue.waitUntilAllOperationsAreFinished()
    }

    /// `await waitUntilFinished()` from a userInteractive task raises a queued background
    /// operation to userInteractive.
    @Test func asyncWaitFromHighPriorityTaskRaisesTheOperation() async {
        let (low, gate) = heldSerialBackgroundQueue()
        let seen = Locked<Int32>(Int32.min)
        let awaited = BlockOperation { seen.withLock { $0 = threadNice() } }
        low.addOperation(awaited)
        let waiter = Task(priority: TaskPriority(.userInteractive)) { await awaited.waitUntilFinished() }
        let deadline = ContinuousClock.now + .seconds(Limits.waitSeconds)
        while awaited.promotedQualityOfService == nil && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        gate.open()
        await waiter.value
        #expect(awaited.promotedQualityOfService == .userInteractive)
        #expect(seen.withLock { $0 } == expectedNice(.userInteractive))
    }
}
