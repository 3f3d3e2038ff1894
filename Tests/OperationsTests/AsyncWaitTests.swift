// AsyncWaitTests.swift — `await waitUntilFinished()`, `await waitUntilAllOperationsAreFinished()`
// and `await addOperationsAndWait(_:)` (issue 15; our addition: Foundation marks the
// blocking forms noasync and has no async ones): they suspend instead of blocking, so 32 waiting
// tasks leave the cooperative pool free; they return when the blocking forms would; and a race
// between waiters registering and operations finishing resumes every waiter once (seeded).
import Glibc
import Operations
import Testing

/// Alone in the process: each test waits (`completes`, 20 s) for work on the cooperative pool,
/// which has a thread per CPU, and long synchronous tests of other suites hold those threads
/// (the liveness fuzzer 30 s, a freed chain under race windows 25 s): on 2 CPUs, with both held,
/// every test here timed out at once (CI's race-window run, 1 in 6).
@Suite(.needsQuietProcess) struct AsyncWaitTests {
    @Test func addition_32TasksAwaitingOperationsLeaveTheCooperativePoolFree() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let operations = (0..<32).map { _ in BlockOperation {} }
        for operation in operations { queue.addOperation(operation) }
        let resumed = Counter()
        var waiters: [Task<Void, Never>] = []
        for operation in operations {
            waiters.append(Task {
                await operation.waitUntilFinished()
                resumed.increment()
            })
        }
        // With 32 tasks blocked in waits the pool (one thread per CPU) would be full.
        let other = await completes("another task on the default executor while 32 tasks wait") {
            await Task.detached { await Task.yield() }.value
        }
        #expect(other)
        #expect(resumed.current == 0, "a wait returned before its operation ran")
        queue.isSuspended = false
        let all = waiters
        await completes("the 32 waits") { for waiter in all { await waiter.value } }
        #expect(resumed.current == 32)
    }

    /// The async wait returns with the dependents counted down, as the blocking one does (D2):
    /// a dependent started by hand right after it is ready. The queue's fast path marks the
    /// operation closed just before its core task finishes; a waiter that came in between
    /// returned while the dependent still counted the dependency (`start()` then trapped "not
    /// ready"). Repeated, because the gap is a few instructions wide here; the race-window
    /// build widens it.
    @Test func addition_aDependentIsReadyOnceTheAsyncWaitForItsDependencyReturns() async {
        let queue = OperationQueue()
        let rounds = 300
        let notReady = Counter()
        let ran = Counter()
        let finished = await completes("\(rounds) dependencies awaited one after another") {
            for _ in 0..<rounds {
                let dependency = BlockOperation {}
                let dependent = BlockOperation { ran.increment() }
                dependent.addDependency(dependency)
                queue.addOperation(dependency)
                await dependency.waitUntilFinished()
                if dependent.isReady { dependent.start() } else { notReady.increment() }
            }
        }
        #expect(finished)
        #expect(notReady.current == 0, "\(notReady.current) of \(rounds) dependents were not ready when the wait for their dependency returned")
        #expect(ran.current == rounds - notReady.current)
    }

    @Test func addition_awaitingAFinishedOperationReturnsAtOnce() async {
        let operation = BlockOperation {}
        operation.start()
        await completes("a wait on a finished operation") { await operation.waitUntilFinished() }
    }

    @Test func addition_awaitingACancelledOperationReturnsOnceItsQueueRetiresIt() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let operation = BlockOperation {}
        queue.addOperation(operation)
        operation.cancel()
        queue.isSuspended = false
        await completes("a wait on a cancelled operation") { await operation.waitUntilFinished() }
        #expect(operation.isFinished && operation.isCancelled)
    }

    @Test func addition_awaitingAQueueLastsWhileOperationsAreAddedMeanwhile() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = Recorder<String>()
        let first = BlockOperation {
            log.append("first")
            // Added while the wait is pending: extends it.
            queue.addOperation { usleep(2000); log.append("second") }
        }
        queue.addOperation(first)
        await completes("the queue wait") { await queue.waitUntilAllOperationsAreFinished() }
        #expect(log.snapshot == ["first", "second"])
        #expect(queue.operationCount == 0)
        // An idle queue: at once.
        await completes("a wait on an idle queue") { await queue.waitUntilAllOperationsAreFinished() }
    }

    @Test func addition_addOperationsAndWaitSuspendsUntilAllFinished() async {
        let queue = OperationQueue()
        let done = Counter()
        let operations = (0..<20).map { _ in BlockOperation { usleep(200); done.increment() } }
        await completes("addOperationsAndWait(_:)") {
            await queue.addOperationsAndWait(operations)
        }
        #expect(done.current == 20 && operations.allSatisfy { $0.isFinished })
    }

    @Test func addition_waitersRacingWithFinishesAreEachResumedOnce() async {
        let seed = testSeed()
        var generator = SeededGenerator(seed: seed)
        let rounds = 200
        let plan = (0..<rounds).map { _ in
            (spin: Int.random(in: 0..<200, using: &generator), waiters: Int.random(in: 1...4, using: &generator),
             completion: Bool.random(using: &generator))
        }
        let queue = OperationQueue()
        let resumed = Counter()
        let ok = await completes("\(rounds) operations, each awaited by 1–4 tasks as it finishes (seed \(seed))") {
            await withTaskGroup(of: Void.self) { group in
                for (spin, waiters, completion) in plan {
                    let operation = BlockOperation { for _ in 0..<spin { _ = sched_yield_hint() } }
                    if completion { operation.completionBlock = {} }
                    queue.addOperation(operation)
                    for _ in 0..<waiters {
                        group.addTask {
                            await operation.waitUntilFinished()
                            #expect(operation.isFinished)
                            resumed.increment()
                        }
                    }
                }
            }
        }
        #expect(ok, "seed \(seed)")
        #expect(resumed.current == plan.reduce(0) { $0 + $1.waiters }, "seed \(seed)")
    }
}

/// A little work that the optimiser keeps.
@inline(never) func sched_yield_hint() -> Int { 1 }
