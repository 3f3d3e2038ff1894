// TaskOperationTests.swift — `TaskOperation` (issue 15; our addition, Foundation has no async
// operation): an async body that finishes the operation when it returns, its error, cancellation
// before and during the body, the width slot it keeps while holding no thread, where and at
// which nice value its body runs after each suspension, and the operation features it shares
// with every operation (dependencies, completion blocks, observers, priorities, waits).
import Glibc
import Operations
import OperationsCore
import Testing

/// What a body saw at one point: the queue, the nice value and the thread.
struct BodyPlace: Sendable, Equatable {
    var onQueue: Bool
    var nice: Int32
    var thread: Int32
    static func here(_ queue: OperationQueue?) -> BodyPlace {
        BodyPlace(onQueue: OperationQueue.current === queue, nice: threadNice(), thread: op_current_thread_id())
    }
}

struct ThrownForTest: Error, Equatable { let code: Int }

@Suite(.sharesProcess) struct TaskOperationTests {
    @Test func addition_theBodyRunsAndTheOperationFinishesWhenItReturns() async {
        let queue = OperationQueue()
        let steps = Recorder<String>()
        let operation = TaskOperation {
            steps.append("before")
            await Task.yield()
            try? await Task.sleep(nanoseconds: 2_000_000)
            steps.append("after")
        }
        #expect(operation.isAsynchronous)
        queue.addOperation(operation)
        await completes("the TaskOperation to finish") { await operation.waitUntilFinished() }
        #expect(operation.isFinished && !operation.isExecuting && !operation.isCancelled)
        #expect(steps.snapshot == ["before", "after"])
        #expect(operation.error == nil)
    }

    // Issue 33, item 1, for a TaskOperation (CompletionBlockTests has the other kinds, on
    // Foundation too): its completion block runs after the finish, off the queue's work, so it
    // may wait for the operation, for its serial queue (which then runs its next operation) and
    // take a lock that a waiter of the operation holds.
    @Test func O7_aTaskOperationsCompletionBlockMayWaitForItsQueueAndItselfAndTakeAWaitersLock() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let lock = Lock()
        let next = BlockOperation {}
        let done = Latch()
        let operation = TaskOperation { await Task.yield() }
        operation.completionBlock = { [unowned operation] in
            operation.waitUntilFinished()
            next.waitUntilFinished()
            queue.waitUntilAllOperationsAreFinished()
            lock.withLock {}
            done.open()
        }
        let waited = onNewThread {
            lock.withLock {
                queue.addOperation(operation)
                queue.addOperation(next)
                operation.waitUntilFinished()
            }
        }
        #expect(waited.wait(seconds: Limits.waitSeconds), "the wait holding the lock its completion block takes did not return")
        #expect(done.wait(seconds: Limits.waitSeconds), "the TaskOperation's completion block did not finish its waits")
    }

    @Test func addition_errorHoldsWhatTheBodyThrew() async {
        let operation = TaskOperation {
            await Task.yield()
            throw ThrownForTest(code: 7)
        }
        OperationQueue().addOperation(operation)
        await completes("the throwing TaskOperation to finish") { await operation.waitUntilFinished() }
        #expect(operation.isFinished)
        #expect(operation.error as? ThrownForTest == ThrownForTest(code: 7))
    }

    @Test func addition_cancelledBeforeItStartsItsBodyNeverRuns() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Counter()
        let completions = Counter()
        let operation = TaskOperation { ran.increment() }
        operation.completionBlock = { completions.increment() }
        queue.addOperation(operation)
        operation.cancel()
        queue.isSuspended = false
        await completes("the cancelled TaskOperation to finish") { await operation.waitUntilFinished() }
        #expect(operation.isFinished && operation.isCancelled)
        #expect(ran.current == 0, "the body of a TaskOperation cancelled before it started ran")
        #expect(eventually { completions.current == 1 }, "the completion block ran \(completions.current) times")
        // Started by hand after cancel(): the same.
        let byHand = TaskOperation { ran.increment() }
        byHand.cancel()
        byHand.start()
        #expect(byHand.isFinished && ran.current == 0)
    }

    @Test func addition_cancelWhileTheBodyRunsCancelsItsTask() async {
        let started = Latch()
        let sawCancellation = Locked(false)
        let operation = TaskOperation {
            started.open()
            // Sleeps until cancelled (Task.sleep throws CancellationError then).
            do {
                try await Task.sleep(nanoseconds: UInt64(Limits.waitSeconds * 1e9))
            } catch {
                sawCancellation.withLock { $0 = Task.isCancelled && error is CancellationError }
                throw error
            }
        }
        OperationQueue().addOperation(operation)
        #expect(await completes("the body to start") { await waitOnThread(started) })
        operation.cancel()
        await completes("the cancelled TaskOperation to finish") { await operation.waitUntilFinished() }
        #expect(sawCancellation.withLock { $0 }, "Task.isCancelled was not true inside the body after cancel()")
        #expect(operation.isCancelled && operation.isFinished)
        #expect(operation.error is CancellationError)
    }

    @Test func addition_itKeepsItsWidthSlotWhileSuspended() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = AsyncEvent()
        let log = Recorder<String>()
        let started = Latch()
        queue.addOperation(TaskOperation {
            started.open()
            await gate.wait()
            log.append("task")
        })
        let block = BlockOperation { log.append("block") }
        queue.addOperation(block)
        #expect(await completes("the body to start") { await waitOnThread(started) })
        quietPeriod()
        #expect(log.snapshot.isEmpty, "an operation started while the serial queue's TaskOperation was suspended: \(log.snapshot)")
        gate.fire()
        await completes("the queue to empty") { await queue.waitUntilAllOperationsAreFinished() }
        #expect(log.snapshot == ["task", "block"])
    }

    @Test func addition_suspendedTaskOperationsHoldNoThread() async {
        let count = 300
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let gate = AsyncEvent()
        let started = Latch()
        let before = ProcessStats.threadCount()
        let operations = (0..<count).map { _ in
            TaskOperation {
                started.arrive()
                await gate.wait()
            }
        }
        for operation in operations { queue.addOperation(operation) }
        let allStarted = await completes("\(count) TaskOperations to start") { await waitOnThread(started, count: count) }
        let during = ProcessStats.threadCount()
        gate.fire()
        await completes("the \(count) TaskOperations to finish") { await queue.waitUntilAllOperationsAreFinished() }
        #expect(allStarted)
        #expect(during - before < 64, "\(count) suspended TaskOperations added \(during - before) threads")
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test(arguments: [QualityOfService.utility, .background, .userInitiated])
    func addition_theBodyRunsOnTheQueueAtItsNiceAlsoAfterEachSuspension(qos: QualityOfService) async {
        let queue = OperationQueue()
        queue.qualityOfService = qos
        let places = Recorder<BodyPlace>()
        queue.addOperation(TaskOperation {
            places.append(.here(queue))
            await Task.yield()
            places.append(.here(queue))
            try? await Task.sleep(nanoseconds: 1_000_000)
            places.append(.here(queue))
        })
        await completes("the queue to empty") { await queue.waitUntilAllOperationsAreFinished() }
        let seen = places.snapshot
        #expect(seen.count == 3)
        for place in seen {
            #expect(place.onQueue, "OperationQueue.current was not the queue in a part of the body")
            #expect(place.nice == expectedNice(qos), "a part of the body ran at nice \(place.nice), not \(qos)'s \(expectedNice(qos))")
        }
    }

    @Test func addition_anOperationsOwnQoSGovernsItsBodyOnAQueueOfAnotherQoS() async {
        let queue = OperationQueue()
        queue.qualityOfService = .background
        let places = Recorder<BodyPlace>()
        let operation = TaskOperation {
            places.append(.here(queue))
            try? await Task.sleep(nanoseconds: 1_000_000)
            places.append(.here(queue))
        }
        operation.qualityOfService = .utility
        queue.addOperation(operation)
        await completes("the operation to finish") { await operation.waitUntilFinished() }
        #expect(places.snapshot.map(\.nice) == [expectedNice(.utility), expectedNice(.utility)])
    }

    @Test func addition_startedByHandTheBodyRunsOnTheGlobalExecutor() async {
        let places = Recorder<BodyPlace>()
        let operation = TaskOperation {
            places.append(.here(nil))
            await Task.yield()
            places.append(.here(nil))
        }
        operation.start()
        await completes("the operation started by hand to finish") { await operation.waitUntilFinished() }
        #expect(operation.isFinished)
        #expect(places.snapshot.count == 2 && places.snapshot.allSatisfy { $0.onQueue },
                "OperationQueue.current was not nil in a body started by hand")
    }

    @Test func addition_dependenciesAcrossTaskAndBlockOperations() async {
        let queue = OperationQueue()
        let log = Recorder<String>()
        let first = TaskOperation {
            try? await Task.sleep(nanoseconds: 2_000_000)
            log.append("first")
        }
        let middle = BlockOperation { log.append("middle") }
        let last = TaskOperation {
            await Task.yield()
            log.append("last")
        }
        middle.addDependency(first)
        last.addDependency(middle)
        let other = OperationQueue()
        other.addOperations([last, middle], waitUntilFinished: false)
        queue.addOperation(first)
        await completes("the chain to finish") { await last.waitUntilFinished() }
        #expect(log.snapshot == ["first", "middle", "last"])
    }

    @Test func addition_completionBlocksAndObserversSeeItFinishOnce() async {
        let completions = Counter()
        let finishedNotes = Counter()
        let executingNotes = Counter()
        let operation = TaskOperation { try? await Task.sleep(nanoseconds: 1_000_000) }
        operation.completionBlock = { completions.increment() }
        let finished = operation.observe(.isFinished) { _ in finishedNotes.increment() }
        let executing = operation.observe(.isExecuting) { _ in executingNotes.increment() }
        OperationQueue().addOperation(operation)
        await completes("the operation to finish") { await operation.waitUntilFinished() }
        #expect(eventually { completions.current == 1 }, "the completion block ran \(completions.current) times")
        #expect(finishedNotes.current == 1)
        #expect(executingNotes.current == 2) // started executing, stopped executing
        finished.invalidate()
        executing.invalidate()
    }

    @Test func addition_queuePrioritiesOrderTaskOperationsOnASerialQueue() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Recorder<String>()
        for (name, priority) in [("low", Operation.QueuePriority.low), ("high", .high), ("normal", .normal), ("veryHigh", .veryHigh)] {
            let operation = TaskOperation {
                log.append(name)
                await Task.yield()
            }
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        queue.isSuspended = false
        await completes("the queue to empty") { await queue.waitUntilAllOperationsAreFinished() }
        #expect(log.snapshot == ["veryHigh", "high", "normal", "low"])
    }

    @Test func addition_aBlockingWaitOnAnotherThreadSeesATaskOperationFinish() async {
        let operation = TaskOperation { try? await Task.sleep(nanoseconds: 2_000_000) }
        OperationQueue().addOperation(operation)
        #expect(await completes("a blocking wait on a thread of ours") {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                detachThread {
                    waitUntilFinished(operation)
                    continuation.resume()
                }
            }
        })
        #expect(operation.isFinished)
    }

    @Test func addition_addTaskOperationAddsATaskOperationThatReportsTheQueueQoS() async {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        queue.isSuspended = true
        let log = Recorder<String>()
        queue.addOperation { log.append("sync") }
        let returned = queue.addTaskOperation {
            await Task.yield()
            log.append("async")
        }
        let failing = queue.addTaskOperation { throw ThrownForTest(code: 7) }
        let added = queue.operations
        #expect(added.count == 3)
        #expect(added.first is BlockOperation && !(added.first is TaskOperation))
        #expect(added[1] === returned && added[2] === failing, "addTaskOperation(_:) did not return the operation it added")
        #expect(returned.qualityOfService == .utility, "the async closure's operation does not report the queue's QoS")
        queue.isSuspended = false
        await completes("the queue to empty") { await queue.waitUntilAllOperationsAreFinished() }
        #expect(Set(log.snapshot) == ["sync", "async"])
        #expect(returned.error == nil)
        #expect(failing.error as? ThrownForTest == ThrownForTest(code: 7), "the thrown error is not the operation's error")
    }
}

/// Waits for `target` arrivals at `latch` on a thread of ours (bounded by `completes`).
func waitOnThread(_ latch: Latch, count target: Int = 1) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        detachThread {
            latch.wait(for: target, seconds: Limits.waitSeconds * 2)
            continuation.resume()
        }
    }
}
