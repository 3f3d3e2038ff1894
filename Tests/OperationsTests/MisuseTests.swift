// MisuseTests.swift — programmer errors (SEMANTICS O4, O9, Q1, Q2, E2 and addDependency of
// itself) trap with a message that names the operation (or queue) and says what was wrong.
// Each case runs in a child process (a Swift Testing exit test); the test checks that the child
// failed and that its standard error holds the message.
//
// Every child that waits for a trap on another thread arms a watchdog first: if the trap never
// comes, the watchdog reports that on standard error and ends the child with success, so the
// test fails with a message instead of hanging.
import Dispatch
import Glibc
import Operations
import Testing

/// In a child: after `seconds`, write `message` to stderr and exit with success (so the parent's
/// `.failure` expectation fails and shows why).
func armWatchdog(_ message: String, seconds: Double = 10) {
    onNewThread {
        quietPeriod(seconds)
        let line = "WATCHDOG: \(message) (no trap within \(seconds) s)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        _exit(0)
    }
}

/// Expects the child's standard error to contain every fragment.
func expectStandardError(_ result: ExitTest.Result?, contains fragments: [String],
                         sourceLocation: SourceLocation = #_sourceLocation) {
    guard let result else { return }  // the exit expectation itself already failed
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    for fragment in fragments {
        #expect(text.contains(fragment), "standard error of the child lacks \"\(fragment)\":\n\(text)",
                sourceLocation: sourceLocation)
    }
}

/// Calls `start()` again from inside its own `main()`.
final class ReentrantStartOperation: Operation, @unchecked Sendable {
    override func main() { start() }
}

/// Adds itself to a queue from inside its own `main()` (so while it executes).
final class SelfAddingOperation: Operation, @unchecked Sendable {
    override func main() { OperationQueue().addOperation(self) }
}

/// Calls `waitUntilFinished()` on itself from inside its own `main()`.
final class SelfWaitingOperation: Operation, @unchecked Sendable {
    override func main() { waitUntilFinished() }
}

// Exit tests work under ThreadSanitizer on this toolchain too (checked), so the suite runs there.
@Suite(.sharesProcess)
struct MisuseTests {
    // MARK: - D4: dependency cycles

    @Test func D4_aWaitBlockedOnlyByADependencyCycleReportsTheCycle() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("a wait blocked by a dependency cycle did not report it")
            let queue = OperationQueue()
            queue.name = "cyclic-queue"
            let a = BlockOperation {}
            let b = BlockOperation {}
            let c = BlockOperation {}
            a.name = "cycle-a"
            b.name = "cycle-b"
            c.name = "cycle-c"
            a.addDependency(b)
            b.addDependency(c)
            c.addDependency(a)
            queue.addOperations([a, b, c], waitUntilFinished: false)
            blocking { queue.waitUntilAllOperationsAreFinished() }
        }
        expectStandardError(result, contains: ["dependency cycle", "\"cycle-a\"", "\"cycle-b\"", "\"cycle-c\"", "\"cyclic-queue\""])
    }

    @Test func D4_waitUntilFinishedOnAnOperationBehindACycleReportsTheCycle() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("waitUntilFinished() behind a dependency cycle did not report it")
            let queue = OperationQueue()
            let a = BlockOperation {}
            let b = BlockOperation {}
            let waiting = BlockOperation {}
            a.name = "loop-a"
            b.name = "loop-b"
            waiting.name = "behind-the-loop"
            a.addDependency(b)
            b.addDependency(a)
            waiting.addDependency(a)
            queue.addOperations([a, b, waiting], waitUntilFinished: false)
            blocking { waiting.waitUntilFinished() }
        }
        expectStandardError(result, contains: ["dependency cycle", "\"loop-a\"", "\"loop-b\"", "\"behind-the-loop\""])
    }

    // Issue 33, item 2: the look for a cycle walks without recursion, so a cycle closed through
    // a chain of 100 000 operations is found and reported (the recursive walk overflowed the
    // stack), in one message of bounded length.
    @Test func D4_aCycleThroughAChainOfAHundredThousandIsReportedByTheWait() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // 60 s: building 10^5 operations takes 5-10 s under ThreadSanitizer beside the
            // other tests (CI on 2 CPUs: 10.4 s once, and once past the 10 s default); a hang
            // guard, not a timing assertion.
            armWatchdog("a wait behind a cycle through a long chain did not report it", seconds: 60)
            let queue = OperationQueue()
            var chain: [Operation] = []
            for index in 0..<100_000 {
                let operation = BlockOperation {}
                operation.name = "link-\(index)"
                if index > 0 { operation.addDependency(chain[index - 1]) }
                chain.append(operation)
            }
            chain[0].addDependency(chain[chain.count - 1])
            queue.addOperations(chain, waitUntilFinished: false)
            let last = chain[chain.count - 1]
            blocking { last.waitUntilFinished() }
        }
        expectStandardError(result, contains: ["dependency cycle", "\"link-99999\"", "more) …"])
        if let text = result.map({ String(decoding: $0.standardErrorContent, as: UTF8.self) }) {
            #expect(text.utf8.count < 20_000, "the report of a long cycle is \(text.utf8.count) bytes")
        }
    }

    // MARK: - underlyingQueue

    @Test func settingUnderlyingQueueWhileTheQueueHoldsOperationsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "busy-underlying"
            queue.isSuspended = true
            queue.addOperation {}
            queue.underlyingQueue = DispatchQueue(label: "late")
        }
        expectStandardError(result, contains: ["underlyingQueue", "while it holds operations", "\"busy-underlying\""])
    }

    @Test func changingTheMainQueuesUnderlyingQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            OperationQueue.main.underlyingQueue = DispatchQueue(label: "other")
        }
        expectStandardError(result, contains: ["underlyingQueue", "cannot be changed", "Main Queue"])
    }

    // MARK: - Q1: adding

    @Test func Q1_addingAnOperationTwiceToTheSameQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.isSuspended = true
            let operation = BlockOperation {}
            operation.name = "twice-same-queue"
            queue.addOperation(operation)
            queue.addOperation(operation)
        }
        expectStandardError(result, contains: ["already in an OperationQueue", "\"twice-same-queue\""])
    }

    @Test func Q1_addingAnOperationToASecondQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = OperationQueue()
            first.isSuspended = true
            let second = OperationQueue()
            second.name = "second-queue"
            let operation = BlockOperation {}
            operation.name = "in-two-queues"
            first.addOperation(operation)
            second.addOperation(operation)
        }
        expectStandardError(result, contains: ["already in an OperationQueue", "\"in-two-queues\"", "\"second-queue\""])
    }

    @Test func Q1_addingAFinishedOperationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}
            operation.name = "already-done"
            operation.start()
            OperationQueue().addOperation(operation)
        }
        expectStandardError(result, contains: ["already finished", "\"already-done\""])
    }

    @Test func Q1_addingAnOperationThatFinishedInAQueueToAnotherQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("the first queue did not finish its operation")
            let operation = BlockOperation {}
            operation.name = "finished-in-a-queue"
            let first = OperationQueue()
            first.addOperation(operation)
            blocking { first.waitUntilAllOperationsAreFinished() }
            OperationQueue().addOperation(operation)
        }
        expectStandardError(result, contains: ["\"finished-in-a-queue\""])
    }

    @Test func Q1_addingAnOperationThatIsExecutingTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = SelfAddingOperation()
            operation.name = "adds-itself-while-running"
            operation.start()
        }
        expectStandardError(result, contains: ["already executing", "\"adds-itself-while-running\""])
    }

    @Test func Q1_theSameOperationTwiceInAddOperationsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}
            operation.name = "listed-twice"
            let other = BlockOperation {}
            OperationQueue().addOperations([operation, other, operation], waitUntilFinished: false)
        }
        expectStandardError(result, contains: ["appears twice", "\"listed-twice\""])
    }

    // MARK: - O4: start()

    @Test func O4_startOnAnOperationThatIsNotReadyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dependency = BlockOperation {}
            let operation = BlockOperation {}
            operation.name = "waits-for-a-dependency"
            operation.addDependency(dependency)
            operation.start()
        }
        expectStandardError(result, contains: ["not ready", "\"waits-for-a-dependency\""])
    }

    @Test func O4_startWhileAlreadyStartedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ReentrantStartOperation()
            operation.name = "started-twice"
            operation.start()
        }
        expectStandardError(result, contains: ["already started", "\"started-twice\""])
    }

    @Test func O4_startByHandOnAQueuedOperationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.isSuspended = true
            let operation = BlockOperation {}
            operation.name = "queued-then-started"
            queue.addOperation(operation)
            operation.start()
        }
        expectStandardError(result, contains: ["in an OperationQueue", "\"queued-then-started\""])
    }

    // MARK: - O6: addExecutionBlock

    @Test func O6_addExecutionBlockAfterStartTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}
            operation.name = "blocks-closed"
            operation.start()
            operation.addExecutionBlock {}
        }
        expectStandardError(result, contains: ["after it started", "\"blocks-closed\""])
    }

    @Test func O6_addExecutionBlockFromInsideARunningBlockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("addExecutionBlock from inside a running block did not trap")
            let operation = BlockOperation()
            operation.name = "adds-to-itself"
            operation.addExecutionBlock { [unowned operation] in operation.addExecutionBlock {} }
            let queue = OperationQueue()
            queue.addOperation(operation)
            blocking { operation.waitUntilFinished() }
            quietPeriod(30)
        }
        expectStandardError(result, contains: ["after it started", "\"adds-to-itself\""])
    }

    // MARK: - O9 / Q6: waits from inside

    @Test func O9_waitUntilFinishedFromInsideTheSameQueuedOperationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("waitUntilFinished() from inside its own (queued) operation did not trap")
            let operation = SelfWaitingOperation()
            operation.name = "waits-for-itself"
            let queue = OperationQueue()
            queue.addOperation(operation)
            quietPeriod(30)
        }
        expectStandardError(result, contains: ["from inside its own work", "\"waits-for-itself\""])
    }

    // Regression: started by hand (not by a queue worker), an operation that waits for itself
    // must trap too (O9), not hang. A watchdog turns a hang into exit code 0, which fails.
    @Test func O9_waitUntilFinishedFromInsideTheSameOperationStartedByHandTraps() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent],
            "exit code 0 means the watchdog fired: waitUntilFinished() from inside the operation hung instead of trapping"
        ) {
            armWatchdog("waitUntilFinished() from inside its own operation, started by hand, did not trap", seconds: 2)
            let operation = SelfWaitingOperation()
            operation.name = "waits-for-itself-by-hand"
            operation.start()
        }
        expectStandardError(result, contains: ["from inside its own work", "\"waits-for-itself-by-hand\""])
    
    }

    @Test func Q6_waitUntilAllOperationsAreFinishedFromInsideAnOperationOfTheSameQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("waitUntilAllOperationsAreFinished() from one of the queue's operations did not trap")
            let queue = OperationQueue()
            queue.name = "self-waiting-queue"
            queue.addOperation { OperationQueue.current?.waitUntilAllOperationsAreFinished() }
            quietPeriod(30)
        }
        expectStandardError(result, contains: ["from one of its own operations", "\"self-waiting-queue\""])
    }

    // Under Swift Testing neither exit-test bodies nor Dispatch's main queue run on the process's
    // main thread, so the child forks: in the forked process the calling thread is the main
    // thread (its thread id is the process id). The child exits with the grandchild's outcome.
    @Test func Q6_waitUntilAllOperationsAreFinishedOnTheMainQueueFromTheMainThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("waitUntilAllOperationsAreFinished() on the main queue from the main thread did not trap")
            let main = OperationQueue.main
            let child = fork()
            if child == 0 {
                blocking { main.waitUntilAllOperationsAreFinished() }
                _exit(0)
            }
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            let exitedCleanly = status & 0x7f == 0 && (status >> 8) & 0xff == 0
            _exit(exitedCleanly ? 0 : 1)
        }
        expectStandardError(result, contains: ["waitUntilAllOperationsAreFinished()", "from the main thread", "Main Queue"])
    }

    // MARK: - Q2: width

    @Test func Q2_negativeMaxConcurrentOperationCountOtherThanTheDefaultTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "minus-two"
            queue.maxConcurrentOperationCount = -2
        }
        expectStandardError(result, contains: ["maxConcurrentOperationCount", "-2", "\"minus-two\""])
    }

    // MARK: - D1: a dependency on itself

    @Test func D1_addDependencyOfItselfTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}
            operation.name = "own-dependency"
            operation.addDependency(operation)
        }
        expectStandardError(result, contains: ["itself", "\"own-dependency\""])
    }

    // MARK: - Swift concurrency (issue 15; our additions)

    @Test func addition_awaitingATaskOperationFromItsOwnBodyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("awaiting a TaskOperation from its own body did not trap")
            let box = Locked<TaskOperation?>(nil)
            let operation = TaskOperation {
                await box.withLock { $0 }!.waitUntilFinished()
            }
            operation.name = "self-awaiting"
            box.withLock { $0 = operation }
            OperationQueue().addOperation(operation)
            quietPeriod(30)
        }
        expectStandardError(result, contains: ["await waitUntilFinished()", "\"self-awaiting\"", "its own body"])
    }

    @Test func addition_awaitingAQueueFromTheBodyOfItsOwnTaskOperationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            armWatchdog("awaiting a queue from its own TaskOperation did not trap")
            let queue = OperationQueue()
            queue.name = "self-awaiting-queue"
            queue.addOperation(TaskOperation { await queue.waitUntilAllOperationsAreFinished() })
            quietPeriod(30)
        }
        expectStandardError(result, contains: ["await waitUntilAllOperationsAreFinished()", "\"self-awaiting-queue\"", "its own"])
    }

    @Test func addition_aQueueWiderThanOneAsAnActorsExecutorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "wide-actor-queue"
            queue.maxConcurrentOperationCount = 2
            _ = queue.asUnownedSerialExecutor()
        }
        expectStandardError(result, contains: ["\"wide-actor-queue\"", "serial executor", "maxConcurrentOperationCount is 2"])
    }

    @Test func addition_wideningTheQueueOfAnActorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "actor-queue"
            queue.maxConcurrentOperationCount = 1
            _ = queue.asUnownedSerialExecutor()
            queue.maxConcurrentOperationCount = 4
        }
        expectStandardError(result, contains: ["\"actor-queue\"", "set to 4", "serial executor of an actor"])
    }

    @Test func addition_assumingAQueueActorsIsolationOffTheQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "isolating-queue"
            queue.maxConcurrentOperationCount = 1
            let counter = QueueBoundCounter(queue: queue)
            counter.preconditionIsolated()
        }
        expectStandardError(result, contains: ["isolated to", "\"isolating-queue\"", "not on the queue"])
    }

    @Test func addition_aQueueWithAnUnderlyingQueueAsAnActorsExecutorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "underlying-actor-queue"
            queue.maxConcurrentOperationCount = 1
            queue.underlyingQueue = DispatchQueue(label: "concurrent", attributes: .concurrent)
            _ = queue.asUnownedSerialExecutor()
        }
        expectStandardError(result, contains: ["\"underlying-actor-queue\"", "serial executor", "underlyingQueue"])
    }
}
