// ReadinessTests.swift — readiness (SEMANTICS O12, D1, D3): when an operation's last dependency
// finishes its `isReady` is re-read through the getter (an override runs), also for an
// operation in no queue; a dependency added to an operation that sits in a queue but has not
// started holds it back.
import Testing

/// The pattern of a real library built on Foundation: an operation in no queue that starts
/// itself from its overridden `isReady` getter once its dependencies are done. Written from
/// the description of issue 13, item 2.
final class SelfStartingOperation: Operation, @unchecked Sendable {
    let ran = Latch()
    private let claimed = Locked(false)

    override var isReady: Bool {
        let ready = super.isReady
        if ready && !isExecuting && !isFinished {
            let first = claimed.withLock { claimed -> Bool in
                defer { claimed = true }
                return !claimed
            }
            if first { start() }
        }
        return ready
    }

    override func main() { ran.open() }
}

/// Counts how often its `isReady` getter is read.
final class CountingReadinessOperation: Operation, @unchecked Sendable {
    let reads = Locked(0)
    override var isReady: Bool {
        reads.withLock { $0 += 1 }
        return super.isReady
    }
}

@Suite(.sharesProcess) struct ReadinessTests {
    @Test func O12_D1_anOperationInNoQueueThatStartsFromItsIsReadyGetterStartsWhenItsDependencyFinishes() {
        let queue = OperationQueue()
        let gate = OperationGate()
        defer { gate.open() }
        let dependency = BlockOperation { gate.wait() }
        let operation = SelfStartingOperation()
        operation.addDependency(dependency)
        queue.addOperation(dependency)
        #expect(!operation.ran.isOpen)
        gate.open()
        waitFor(operation.ran, "the operation in no queue to start itself from isReady once its dependency finished")
        #expect(eventually { operation.isFinished })
    }

    @Test func O12_D1_theGetterIsReReadWhenTheLastOfSeveralDependenciesFinishes() {
        let first = BlockOperation {}
        let second = BlockOperation {}
        let operation = SelfStartingOperation()
        operation.addDependency(first)
        operation.addDependency(second)
        first.start()
        #expect(!operation.ran.isOpen, "started with a dependency unfinished")
        second.start()
        waitFor(operation.ran, "the operation to start itself once both dependencies finished by hand")
    }

    @Test func O12_theGetterOfAQueuedOperationIsReReadWhenItsDependencyFinishes() {
        let queue = OperationQueue()
        let dependency = BlockOperation {}
        let operation = CountingReadinessOperation()
        operation.addDependency(dependency)
        let before = operation.reads.withLock { $0 }
        let dependencyQueue = OperationQueue()
        dependencyQueue.isSuspended = true
        dependencyQueue.addOperation(dependency)
        queue.addOperation(operation)
        dependencyQueue.isSuspended = false
        waitUntilFinished(operation)
        #expect(operation.reads.withLock { $0 } > before, "\(runtimeUnderTest): isReady was never read")
    }

    @Test func D3_aDependencyAddedWhileTheQueueIsSuspendedHoldsTheOperation() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let journal = Recorder<String>()
        let ran = Latch()
        let operation = BlockOperation { journal.append("operation"); ran.open() }
        queue.addOperation(operation)
        #expect(operation.isReady)
        let dependency = BlockOperation { journal.append("dependency") }
        operation.addDependency(dependency)
        #expect(!operation.isReady, "\(runtimeUnderTest): isReady after a new unfinished dependency")
        queue.isSuspended = false
        #expect(!ran.wait(seconds: Deadline.quietSeconds), "\(runtimeUnderTest): started before its new dependency finished")
        OperationQueue().addOperation(dependency)
        waitFor(ran, "the operation, once its new dependency finished")
        #expect(journal.snapshot == ["dependency", "operation"])
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func D3_aDependencyAddedWhileTheOperationWaitsForASlotHoldsIt() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = OperationGate()
        defer { gate.open() }
        let blockerRunning = Latch()
        queue.addOperation { blockerRunning.open(); gate.wait() }
        guard waitFor(blockerRunning, "the operation holding the slot") else { return }
        let journal = Recorder<String>()
        let ran = Latch()
        let operation = BlockOperation { journal.append("operation"); ran.open() }
        let other = BlockOperation { journal.append("other") }
        queue.addOperations([operation, other], waitUntilFinished: false)
        let dependency = BlockOperation { journal.append("dependency") }
        operation.addDependency(dependency)
        #expect(!operation.isReady)
        gate.open()
        #expect(!ran.wait(seconds: Deadline.quietSeconds), "\(runtimeUnderTest): started before its new dependency finished")
        #expect(eventually { other.isFinished }, "the queue went on with its other operation")
        dependency.start()
        waitFor(ran, "the operation, once its new dependency finished")
        #expect(journal.snapshot == ["other", "dependency", "operation"])
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test(.tags(.deliberateDifference))
    func D3_deliberateDifference_removingAnUnfinishedDependencyMakesTheOperationReady() {
        // Apple: "removeDependency of an unfinished dependency can make the receiver ready".
        // Foundation on Linux never counts a removed unfinished dependency down.
        let dependency = BlockOperation {}
        let other = BlockOperation {}
        let operation = BlockOperation {}
        operation.addDependency(dependency)
        operation.addDependency(other)
        deliberateDifference("Foundation on Linux: removeDependency(_:) of an unfinished dependency leaves it counted") {
            operation.removeDependency(dependency)
            #expect(!operation.isReady)
            operation.removeDependency(other)
            #expect(operation.isReady, "\(runtimeUnderTest): not ready once every unfinished dependency was removed")
            #expect(operation.dependencies.isEmpty)
        }
    }

    @Test(.tags(.deliberateDifference))
    func D3_deliberateDifference_removingTheLateDependencyLetsTheQueuedOperationRun() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Latch()
        let operation = BlockOperation { ran.open() }
        queue.addOperation(operation)
        let dependency = BlockOperation {}
        operation.addDependency(dependency)
        queue.isSuspended = false
        #expect(!ran.wait(seconds: Deadline.quietSeconds))
        deliberateDifference("Foundation on Linux: removeDependency(_:) of an unfinished dependency leaves it counted") {
            operation.removeDependency(dependency)
            waitFor(ran, "the operation, once its only dependency was removed", seconds: Deadline.differenceSeconds)
            #expect(operation.dependencies.isEmpty)
        }
        if onFoundation { dependency.start() } // let Foundation's queue go on
    }

    @Test func D3_aDependencyAddedAfterTheOperationStartedHasNoEffect() {
        let queue = OperationQueue()
        let gate = OperationGate()
        defer { gate.open() }
        let running = Latch()
        let operation = BlockOperation { running.open(); gate.wait() }
        queue.addOperation(operation)
        guard waitFor(running, "the operation to start") else { return }
        let dependency = BlockOperation {}
        operation.addDependency(dependency)
        gate.open()
        waitUntilFinished(operation)
        #expect(operation.isFinished && !dependency.isFinished)
        #expect(operation.dependencies.count == 1)
    }
}
