// CancellationTests.swift — cancel() (SEMANTICS O8): an operation cancelled before it started
// is retired promptly, even while one of its dependencies is still executing (finished, its
// completion block run, its dependents released), and cancel() after finish has no effect.
import Testing

@Suite(.sharesProcess) struct CancellationTests {
    /// A dependency that executes until `gate` opens, added to `queue`. It waits with
    /// `waitUntilFinished()`, so a runtime can stand a spare thread in for its worker.
    private func executingDependency(on queue: OperationQueue, gate: OperationGate) -> (BlockOperation, Latch) {
        let executing = Latch()
        let dependency = BlockOperation {
            executing.open()
            gate.wait()
        }
        dependency.name = "executing dependency"
        queue.addOperation(dependency)
        return (dependency, executing)
    }

    @Test(arguments: ["another queue", "the same queue"])
    func O8_anOperationCancelledWhileItsDependencyExecutesIsRetiredAtOnce(_ placement: String) {
        let dependencyQueue = OperationQueue()
        let queue = placement == "the same queue" ? dependencyQueue : OperationQueue()
        let gate = OperationGate()
        defer { gate.open() }
        let (dependency, executing) = executingDependency(on: dependencyQueue, gate: gate)
        guard waitFor(executing, "the dependency to execute") else { return }

        let bodyRan = Latch()
        let completed = Latch()
        let cancelled = BlockOperation { bodyRan.open() }
        cancelled.name = "cancelled"
        cancelled.completionBlock = { completed.open() }
        cancelled.addDependency(dependency)
        let dependentRan = Latch()
        let dependent = BlockOperation { dependentRan.open() }
        dependent.addDependency(cancelled)
        queue.addOperations([cancelled, dependent], waitUntilFinished: false)
        #expect(!cancelled.isReady)

        cancelled.cancel()
        #expect(cancelled.isCancelled && cancelled.isReady)
        guard waitFor(completed, "the completion block of the cancelled operation while its dependency executes") else { return }
        #expect(eventually { cancelled.isFinished }, "\(runtimeUnderTest): cancelled operation not finished")
        waitFor(dependentRan, "its dependent, released by the cancelled operation")
        #expect(!bodyRan.isOpen, "the cancelled operation's body ran")
        #expect(dependency.isExecuting, "the dependency was still executing throughout")
        gate.open()
        waitUntilAllOperationsAreFinished(dependencyQueue)
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func O8_aCancelledOperationOnASerialQueueDoesNotWaitForItsDependencyOnAnotherQueue() {
        let gate = OperationGate()
        defer { gate.open() }
        let (dependency, executing) = executingDependency(on: OperationQueue(), gate: gate)
        guard waitFor(executing, "the dependency to execute") else { return }
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        let journal = Recorder<String>()
        let cancelled = BlockOperation { journal.append("cancelled body") }
        cancelled.addDependency(dependency)
        let next = BlockOperation { journal.append("next") }
        serial.addOperations([cancelled, next], waitUntilFinished: false)
        cancelled.cancel()
        #expect(eventually { cancelled.isFinished && next.isFinished },
                "\(runtimeUnderTest): the serial queue waited for the cancelled operation's dependency")
        #expect(journal.snapshot == ["next"])
        // Foundation on Linux keeps unretained pointers to an operation's dependents: the
        // dependent must outlive the dependency's finish there.
        gate.open()
        waitUntilFinished(dependency)
        withExtendedLifetime(cancelled) {}
    }

    @Test func O8_cancelAfterFinishHasNoEffect() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        queue.addOperation(operation)
        waitUntilFinished(operation)
        operation.cancel()
        #expect(!operation.isCancelled, "\(runtimeUnderTest): cancel() after finish set isCancelled")

        let byHand = BlockOperation {}
        byHand.start()
        byHand.cancel()
        #expect(!byHand.isCancelled)
        #expect(byHand.isFinished)
    }

    @Test func O8_cancelTwiceIsIdempotent() {
        let operation = BlockOperation {}
        operation.cancel()
        operation.cancel()
        #expect(operation.isCancelled && operation.isReady && !operation.isFinished)
        operation.start()
        #expect(operation.isFinished)
    }
}

/// Occupies every worker of a class with bodies blocked where the runtime cannot see: it has the
/// process to itself.
@Suite(.needsQuietProcess) struct BlockedWorkerCancellationTests {
    @Test func O8_aCancelledOperationIsRetiredWhileEveryWorkerIsBlockedInABody() {
        // One blocked body per CPU, each blocked on a lock the runtime knows nothing of (a
        // condition variable), as a real body blocks on I/O or a lock: the runtime must still
        // retire an operation cancelled meanwhile, and run other work.
        let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let blockers = OperationQueue()
        blockers.maxConcurrentOperationCount = cpus
        let release = Latch()
        defer { release.open() }
        let blocked = Latch()
        var holders: [BlockOperation] = []
        for _ in 0..<cpus {
            let holder = BlockOperation {
                blocked.arrive()
                _ = release.wait(seconds: Deadline.seconds)
            }
            holders.append(holder)
        }
        blockers.addOperations(holders, waitUntilFinished: false)
        guard waitFor(blocked, "\(cpus) bodies blocked at once", count: cpus) else { return }

        let queue = OperationQueue()
        let completed = Latch()
        let cancelled = BlockOperation {}
        cancelled.completionBlock = { completed.open() }
        cancelled.addDependency(holders[0])
        queue.addOperation(cancelled)
        cancelled.cancel()
        waitFor(completed, "the cancelled operation's completion block while every worker is blocked in a body")
        let ran = Latch()
        queue.addOperation { ran.open() }
        waitFor(ran, "another operation while every worker is blocked in a body")
        #expect(holders.allSatisfy { $0.isExecuting }, "the blockers were executing throughout")
        release.open()
        waitUntilAllOperationsAreFinished(blockers)
        waitUntilAllOperationsAreFinished(queue)
    }
}
