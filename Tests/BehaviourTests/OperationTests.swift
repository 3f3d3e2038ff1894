// OperationTests.swift — operation objects (SEMANTICS O1–O12): the code samples of the
// Concurrency Programming Guide's "Operation Queues" chapters (docs/guide/operation-objects.zh.md,
// executing-operations.zh.md) ported to Swift as literally as the language allows, and tests of
// them in queues and by hand; the default start(), custom synchronous and asynchronous
// subclasses and their KVO notifications, completion blocks, cancellation, waits, custom
// readiness, identity and description. (Typed observation and invocation operations are ours
// only: Tests/OperationsTests/OperationTests.swift.)
//
// Foundation on Linux has no `isConcurrent` (Apple's Operation has it, deprecated in favour of
// `isAsynchronous`): in the Foundation build the samples override `isAsynchronous` instead.
import Testing

// MARK: - Guide samples

// MARK: - "Performing the Main Task": MyNonConcurrentOperation

/// The guide's non-concurrent template: an initializer that stores the data, and `main`.
final class MyNonConcurrentOperation: Operation, @unchecked Sendable {
    let myData: [Int]
    private let lockedResult = Locked<Int?>(nil)

    init(data: [Int]) {
        myData = data
        super.init()
    }

    /// "Do some work on myData and report the results."
    var result: Int? { lockedResult.withLock { $0 } }

    override func main() {
        lockedResult.withLock { $0 = myData.reduce(0, +) }
    }
}

// MARK: - "Responding to Cancellation Events"

/// The guide's cancellation sample: `main` polls `isCancelled` on each iteration of its loop.
/// `isDone` becomes true after `iterations` rounds (or, as a safety net for the test, after a
/// deadline), so an uncancelled run finishes on its own.
final class CancellationPollingOperation: Operation, @unchecked Sendable {
    let iterations: Int
    let started = Latch()
    private let counts = Locked((rounds: 0, stoppedByCancel: false))

    init(iterations: Int) {
        self.iterations = iterations
        super.init()
    }

    var rounds: Int { counts.withLock { $0.rounds } }
    var stoppedByCancel: Bool { counts.withLock { $0.stoppedByCancel } }

    override func main() {
        let deadline = ContinuousClock.now + .seconds(Deadline.seconds)
        var isDone = false
        while !isCancelled && !isDone {
            // Do some work and set isDone to YES when finished
            let rounds = counts.withLock { $0.rounds += 1; return $0.rounds }
            if rounds == 1 { started.open() }
            isDone = rounds >= iterations || ContinuousClock.now > deadline
        }
        counts.withLock { $0.stoppedByCancel = !isDone }
    }
}

// MARK: - "Configuring Operations for Concurrent Execution": MyOperation

/// The guide's `MyOperation`: a concurrent operation that runs `main` on a thread it detaches
/// itself, keeps its own `executing` / `finished` state and announces changes with will/didChange.
///
/// Deviations from the Objective-C text: the instance variables are guarded by a lock (the guide
/// requires the accessors to be safe from any thread); `main` runs the test's `work` closure
/// where the guide says "Do the main work of the operation here"; and `start` sets `executing`
/// before it detaches the thread, not after: in the guide's order a short `main` can run
/// `completeOperation` before `start` sets `executing = YES`, which leaves a finished operation
/// that reports executing forever (a race in the sample itself, seen here on the first run).
final class MyOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var executing = false  // guarded by `lock`
    private var finished = false   // guarded by `lock`
    private let work: @Sendable (MyOperation) -> Void
    /// Opens when `main` starts on the detached thread.
    let mainStarted = Latch()
    /// The thread `main` ran on.
    let mainThread = Locked<Int32>(0)

    init(work: @escaping @Sendable (MyOperation) -> Void = { _ in }) {
        self.work = work
        super.init()
    }

    #if BEHAVIOUR_ON_FOUNDATION
    override var isAsynchronous: Bool { true }
    #else
    override var isConcurrent: Bool { true }
    #endif
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        // Always check for cancellation before launching the task.
        if isCancelled {
            // Must move the operation to the finished state if it is canceled.
            willChangeValue(forKey: "isFinished")
            lock.withLock { finished = true }
            didChangeValue(forKey: "isFinished")
            return
        }

        // If the operation is not canceled, begin executing the task.
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true }
        detachThread { self.main() }
        didChangeValue(forKey: "isExecuting")
    }

    override func main() {
        mainThread.withLock { $0 = currentThreadID() }
        mainStarted.open()
        // Do the main work of the operation here.
        work(self)
        completeOperation()
    }

    func completeOperation() {
        willChangeValue(forKey: "isFinished")
        willChangeValue(forKey: "isExecuting")

        lock.withLock {
            executing = false
            finished = true
        }

        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// A `MyOperation` whose work waits for `release` (bounded): it holds its queue slot, on a thread
/// of its own, until the test opens the gate. No runtime worker is blocked meanwhile.
func heldMyOperation(_ release: Latch) -> MyOperation {
    MyOperation { _ in release.wait() }
}

// MARK: - "Executing Operations Manually": performOperation (listing 2-8)

/// The guide's `performOperation:`. Returns whether it ran (or retired) the operation.
///
/// Deviation: the guide's cancelled branch posts the isFinished/isExecuting pair on `self` (the
/// caller), which is a slip in the sample; the port lets the operation's own `start()` move the
/// cancelled operation to finished, which is what the comment there asks for.
@discardableResult
func performOperation(_ anOp: Operation) -> Bool {
    var ranIt = false

    if anOp.isReady && !anOp.isCancelled {
        #if BEHAVIOUR_ON_FOUNDATION
        let isConcurrent = anOp.isAsynchronous
        #else
        let isConcurrent = anOp.isConcurrent
        #endif
        if !isConcurrent {
            anOp.start()
        } else {
            detachThread { anOp.start() }
        }
        ranIt = true
    } else if anOp.isCancelled {
        // If it was canceled before it was started,
        //  move the operation to the finished state.
        anOp.start()

        // Set ranIt to YES to prevent the operation from
        // being passed to this method again in the future.
        ranIt = true
    }
    return ranIt
}

// MARK: - Subclasses the other tests use

/// Not asynchronous (`isAsynchronous` stays false), yet its `start()` returns before the work is
/// done: it marks itself executing, returns, and a thread of its own marks it finished and posts
/// `didChangeValue(forKey: "isFinished")` once `release` opens.
final class LateFinishingOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var executing = false  // guarded by `lock`
    private var finished = false   // guarded by `lock`
    let release: Latch
    let startReturned = Latch()

    init(release: Latch) {
        self.release = release
        super.init()
    }

    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true }
        didChangeValue(forKey: "isExecuting")
        let release = self.release
        detachThread {
            release.wait()
            self.willChangeValue(forKey: "isFinished")
            self.willChangeValue(forKey: "isExecuting")
            self.lock.withLock {
                self.executing = false
                self.finished = true
            }
            self.didChangeValue(forKey: "isExecuting")
            self.didChangeValue(forKey: "isFinished")
        }
        startReturned.open()
    }
}

/// Overrides `start()` and the state accessors but defers to `super` for all of them, logging
/// what `super` reports around the default implementation.
final class SuperCallingOperation: Operation, @unchecked Sendable {
    let log = Recorder<String>()
    /// Opens once start() returned (the operation is finished, and waiters released, inside
    /// super.start(), before the override's last line runs, as in Foundation).
    let startReturned = Latch()

    override var isExecuting: Bool { super.isExecuting }
    override var isFinished: Bool { super.isFinished }
    override var isReady: Bool { super.isReady }

    override func start() {
        log.append("before start: executing=\(super.isExecuting) finished=\(super.isFinished)")
        super.start()
        log.append("after start: executing=\(super.isExecuting) finished=\(super.isFinished)")
        startReturned.open()
    }

    override func main() {
        log.append("main: executing=\(super.isExecuting) finished=\(super.isFinished)")
    }
}

/// Custom readiness (O12): ready only when `super.isReady` and its gate is open. Opening the gate
/// posts the "isReady" change the guide asks for.
final class GatedOperation: Operation, @unchecked Sendable {
    private let lock = Lock()
    private var gate = false  // guarded by `lock`
    let ran = Latch()
    let readinessReads = Counter()

    override var isReady: Bool {
        readinessReads.increment()
        return super.isReady && lock.withLock { gate }
    }

    func openGate(announce: Bool = true) {
        if announce { willChangeValue(forKey: "isReady") }
        lock.withLock { gate = true }
        if announce { didChangeValue(forKey: "isReady") }
    }

    override func main() { ran.open() }
}

/// An operation whose `main` calls a closure with itself.
final class ProbeOperation: Operation, @unchecked Sendable {
    private let body: @Sendable (Operation) -> Void
    init(_ body: @escaping @Sendable (Operation) -> Void) {
        self.body = body
        super.init()
    }
    override func main() { body(self) }
}

@Suite(.sharesProcess) struct OperationTests {
    // MARK: - O1: abstract base; main() / start() subclasses; block and invocation operations

    @Test func O1_guideNonConcurrentSubclassRunsMainInAQueueAndByHand() {
        let queued = MyNonConcurrentOperation(data: [1, 2, 3])
        let queue = OperationQueue()
        queue.addOperation(queued)
        guard waitUntilFinished(queued) else { return }
        #expect(queued.result == 6)
        #expect(queued.isFinished && !queued.isExecuting)

        let byHand = MyNonConcurrentOperation(data: [10, 20])
        byHand.start()
        #expect(byHand.result == 30, "\(runtimeUnderTest): start() of a non-concurrent operation returns after main()")
        #expect(byHand.isFinished)
    }

    @Test func O1_baseOperationWithoutOverridesDoesNothingAndFinishes() {
        let operation = Operation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(operation.isFinished && !operation.isCancelled)
    }

    @Test func O1_O8_guideCancellationSampleStopsItsLoopWhenCancelled() {
        let queue = OperationQueue()
        // Would run for the whole deadline if the cancel were not seen.
        let looping = CancellationPollingOperation(iterations: Int.max)
        queue.addOperation(looping)
        guard waitFor(looping.started, "the polling loop to start") else { return }
        looping.cancel()
        guard waitUntilFinished(looping, seconds: 5) else { return }
        #expect(looping.stoppedByCancel, "\(runtimeUnderTest): main() returned without seeing isCancelled")
        #expect(looping.isCancelled && looping.isFinished)

        // Uncancelled, the same loop ends on its own.
        let finite = CancellationPollingOperation(iterations: 1000)
        queue.addOperation(finite)
        guard waitUntilFinished(finite) else { return }
        #expect(finite.rounds == 1000)
        #expect(!finite.stoppedByCancel)
    }

    // MARK: - O2: state flags readable from any thread

    @Test func O2_stateFlagsAreConsistentWhenReadFromManyThreadsWhileTheOperationRuns() {
        let release = Latch()
        let started = Latch()
        let operation = BlockOperation {
            started.open()
            release.wait()
        }
        let violations = Recorder<String>()
        let stop = Latch()
        var readers: [Latch] = []
        for index in 0..<3 {
            readers.append(onNewThread {
                var sawFinished = false
                while !stop.isOpen {
                    // (Whether isExecuting can read true after isFinished did is the known issue
                    // of O2_isExecutingNeverReadsTrueOnceIsFinishedReadTrue; not checked here.)
                    let finished = operation.isFinished
                    _ = operation.isExecuting
                    _ = operation.isReady
                    _ = operation.isCancelled
                    if sawFinished && !finished { violations.append("reader \(index): isFinished went back to false") }
                    sawFinished = sawFinished || finished
                    sched_yield()
                }
            })
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        if waitFor(started, "the operation to start") {
            #expect(operation.isExecuting && !operation.isFinished)
        }
        release.open()
        waitUntilFinished(operation)
        #expect(operation.isFinished && !operation.isExecuting)
        stop.open()
        for reader in readers { waitFor(reader, "a reader thread to stop") }
        #expect(violations.snapshot.isEmpty, "\(runtimeUnderTest): \(violations.snapshot)")
        // The readers read the operation up to the end, so it must be freed on this thread, after
        // their latches: TSan does not see Swift's reference counts, and a worker dropping the
        // queue's last reference would free it with no edge from their reads (a false race on
        // the task memory's reuse). A queue wait returns only once the queue released what it held.
        waitUntilAllOperationsAreFinished(queue)
    }

    // Regression: finishing switches executing off and finished on in one atomic step, so no
    // reader sees isFinished == true and then isExecuting == true.
    @Test func O2_isExecutingNeverReadsTrueOnceIsFinishedReadTrue() {
      // Operations are started by hand one after another on one thread while another thread
      // keeps reading the state of the one being run: isFinished, then isExecuting.
      let count = runningUnderThreadSanitizer ? 2000 : 20000
      let operations = (0..<count).map { _ in Operation() }
      let current = Locked(0)
      let violations = Counter()
      let stop = Latch()
      let reader = onNewThread {
          while !stop.isOpen {
              let index = current.withLock { $0 }
              guard index < count else { break }
              let operation = operations[index]
              for _ in 0..<64 {
                  if operation.isFinished && operation.isExecuting { violations.increment() }
              }
          }
      }
      for (index, operation) in operations.enumerated() {
          current.withLock { $0 = index }
          operation.start()
      }
      current.withLock { $0 = count }
      stop.open()
      waitFor(reader, "the reader thread")
      #expect(violations.current == 0,
              "\(runtimeUnderTest): \(violations.current) reads saw isExecuting true after isFinished read true (both state bits set at once)")
    
    }

    // MARK: - O3: isAsynchronous / isConcurrent; start() on the calling thread

    @Test func O3_synchronousOperationRunsOnTheThreadThatCallsStart() {
        let mainThread = Locked<Int32>(0)
        let operation = BlockOperation { mainThread.withLock { $0 = currentThreadID() } }
        #expect(!operation.isAsynchronous)
        #if !BEHAVIOUR_ON_FOUNDATION
        #expect(!operation.isConcurrent)
        #endif
        operation.start()
        #expect(mainThread.withLock { $0 } == currentThreadID(), "\(runtimeUnderTest): main() ran on another thread")
        #expect(operation.isFinished, "\(runtimeUnderTest): start() returned before the work was done")
    }

    // MARK: - O5: custom asynchronous subclasses (the guide's MyOperation)

    @Test func O5_guideMyOperationRunByHandReturnsFromStartAndFinishesOnItsOwnThread() {
        let release = Latch()
        let completions = Counter()
        let operation = heldMyOperation(release)
        operation.completionBlock = { completions.increment() }
        #if BEHAVIOUR_ON_FOUNDATION
        #expect(operation.isAsynchronous)
        #else
        #expect(operation.isConcurrent)
        #endif
        #expect(performOperation(operation))  // concurrent: performOperation detaches start()
        guard waitFor(operation.mainStarted, "MyOperation.main to start on its own thread") else { release.open(); return }
        #expect(operation.isExecuting && !operation.isFinished)
        #expect(operation.mainThread.withLock { $0 } != currentThreadID())
        // Not finished until completeOperation() posted isFinished.
        quietPeriod()
        #expect(!operation.isFinished && completions.current == 0)
        release.open()
        guard waitUntilFinished(operation) else { return }
        #expect(operation.isFinished && !operation.isExecuting)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): the completion block ran \(completions.current) times")
    }

    @Test func O5_guideMyOperationStartCalledDirectlyReturnsBeforeTheWorkIsDone() {
        let release = Latch()
        let operation = heldMyOperation(release)
        operation.start()  // returns at once: the work runs on the detached thread
        #expect(operation.isExecuting && !operation.isFinished)
        release.open()
        guard waitUntilFinished(operation) else { return }
        #expect(operation.isFinished && !operation.isExecuting)
    }

    @Test func O5_guideMyOperationInAQueueFinishesWhenItPostsIsFinished() {
        let queue = OperationQueue()
        let operations = (0..<4).map { _ in MyOperation() }
        let completions = Counter()
        for operation in operations {
            operation.completionBlock = { completions.increment() }
            queue.addOperation(operation)
        }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        for operation in operations {
            #expect(operation.isFinished && !operation.isExecuting)
            #expect(operation.mainThread.withLock { $0 } != 0)
        }
        #expect(eventually { completions.current == 4 }, "\(runtimeUnderTest): \(completions.current) of 4 completion blocks ran")
    }

    @Test func O5_Q2_guideMyOperationHoldsItsSlotOnAWidthOneQueueAndItsDependentsWaitUntilCompleteOperation() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let otherQueue = OperationQueue()
        let release = Latch()
        let first = heldMyOperation(release)
        first.name = "first"
        let nextStarted = Latch()
        let sawFirstFinished = Locked<Bool?>(nil)
        let next = BlockOperation {
            sawFirstFinished.withLock { $0 = first.isFinished }
            nextStarted.open()
        }
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan, name: "dependent")
        dependent.addDependency(first)
        otherQueue.addOperation(dependent)
        queue.addOperation(first)
        queue.addOperation(next)

        guard waitFor(first.mainStarted, "MyOperation.main to start") else { release.open(); return }
        quietPeriod()
        #expect(!nextStarted.isOpen, "\(runtimeUnderTest): the next operation started while MyOperation held the only slot")
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest): a dependent of MyOperation ran before it posted isFinished")
        #expect(first.isExecuting && !first.isFinished)

        release.open()
        waitFor(nextStarted, "the next operation to start after completeOperation()")
        waitFor(dependentRan, "the dependent to run after completeOperation()")
        #expect(sawFirstFinished.withLock { $0 } == true)
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func O5_O8_guideMyOperationCancelledBeforeItRunsIsRetiredAndItsDependentsRun() {
        let queue = OperationQueue()
        let operation = MyOperation()
        operation.cancel()
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan)
        dependent.addDependency(operation)
        queue.addOperations([dependent, operation], waitUntilFinished: false)
        guard waitFor(dependentRan, "the dependent of a cancelled MyOperation to run") else { return }
        #expect(operation.isFinished && operation.isCancelled)
        #expect(!operation.mainStarted.isOpen, "\(runtimeUnderTest): main() ran for a cancelled MyOperation")
    }

    @Test func O5_guidePerformOperationRunsOnlyReadyUncancelledOperationsAndRetiresCancelledOnes() {
        // Not ready: a dependency has not finished.
        let dependency = BlockOperation {}
        let waiting = BlockOperation {}
        waiting.addDependency(dependency)
        #expect(!performOperation(waiting))
        #expect(!waiting.isFinished && !waiting.isExecuting)
        #expect(performOperation(dependency))
        #expect(dependency.isFinished, "\(runtimeUnderTest): performOperation starts a non-concurrent operation synchronously")
        #expect(performOperation(waiting))
        #expect(waiting.isFinished)

        // Concurrent: started on a detached thread.
        let concurrent = MyOperation()
        #expect(performOperation(concurrent))
        waitUntilFinished(concurrent)
        #expect(concurrent.mainStarted.isOpen)

        // Cancelled: moved to finished without running.
        let ran = Counter()
        let cancelled = BlockOperation { ran.increment() }
        cancelled.cancel()
        #expect(performOperation(cancelled))
        #expect(cancelled.isFinished && ran.current == 0)
    }

    @Test func O5_synchronousOperationWhoseStartReturnsEarlyFinishesWhenItPostsIsFinishedLater() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = Latch()
        let late = LateFinishingOperation(release: release)
        late.name = "late"
        #expect(!late.isAsynchronous)
        let nextRan = Latch()
        queue.addOperation(late)
        queue.addOperation(signallingOperation(nextRan, name: "next"))
        guard waitFor(late.startReturned, "start() of the late-finishing operation to return") else { release.open(); return }
        quietPeriod()
        #expect(!nextRan.isOpen, "\(runtimeUnderTest): the queue freed the slot when start() returned, before isFinished was posted")
        #expect(late.isExecuting && !late.isFinished)
        release.open()
        waitFor(nextRan, "the next operation after the late isFinished notification")
        #expect(late.isFinished)
    }

    @Test func O5_D2_lateFinishingOperationRunByHandHoldsItsWaitersAndDependentsUntilItPostsIsFinished() {
        let release = Latch()
        let late = LateFinishingOperation(release: release)
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan)
        dependent.addDependency(late)
        let queue = OperationQueue()
        queue.addOperation(dependent)
        late.start()
        #expect(late.isExecuting && !late.isFinished)
        let waiterDone = onNewThread { late.waitUntilFinished() }
        quietPeriod()
        #expect(!waiterDone.isOpen, "\(runtimeUnderTest): waitUntilFinished() returned before isFinished was posted")
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest): the dependent ran before isFinished was posted")
        release.open()
        waitFor(waiterDone, "waitUntilFinished() after the late isFinished notification")
        waitFor(dependentRan, "the dependent after the late isFinished notification")
    }

    @Test func O5_subclassCallingSuperStartSeesSuperStateAroundMain() {
        let expected = [
            "before start: executing=false finished=false",
            "main: executing=true finished=false",
            "after start: executing=false finished=true",
        ]
        let byHand = SuperCallingOperation()
        byHand.start()
        #expect(byHand.log.snapshot == expected)
        #expect(byHand.isFinished && !byHand.isExecuting)

        let queued = SuperCallingOperation()
        let queue = OperationQueue()
        queue.addOperation(queued)
        guard waitUntilFinished(queued) else { return }
        guard waitFor(queued.startReturned, "the queued operation's start() to return") else { return }
        #expect(queued.log.snapshot == expected)
    }

    @Test func O5_nestedWillDidChangePairsAndUnknownKeysAreHarmless() {
        let operation = BlockOperation {}
        let completions = Counter()
        operation.completionBlock = { completions.increment() }
        // Before it runs: a nested isFinished/isExecuting pair, unknown keys, and an isReady post.
        operation.willChangeValue(forKey: "isFinished")
        operation.willChangeValue(forKey: "isExecuting")
        operation.willChangeValue(forKey: "no such key")
        operation.didChangeValue(forKey: "no such key")
        operation.didChangeValue(forKey: "isExecuting")
        operation.didChangeValue(forKey: "isFinished")
        operation.didChangeValue(forKey: "")
        operation.didChangeValue(forKey: "isReady")
        #expect(!operation.isFinished && !operation.isExecuting && operation.isReady)
        #expect(completions.current == 0, "\(runtimeUnderTest): an isFinished post on an unfinished operation ran its completion block")

        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        // After it finished: posts again change nothing, and the completion block stays at one run.
        operation.willChangeValue(forKey: "isFinished")
        operation.didChangeValue(forKey: "isFinished")
        operation.didChangeValue(forKey: "whatever")
        #expect(operation.isFinished)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): the completion block ran \(completions.current) times")
    }

    @Test func O5_isFinishedPostedFromInsideMainOfAnUnfinishedOperationDoesNotReleaseItsDependents() {
        let queue = OperationQueue()
        let log = Recorder<String>()
        let first = ProbeOperation { op in
            op.willChangeValue(forKey: "isFinished")
            op.didChangeValue(forKey: "isFinished")  // it is not finished: nothing may happen
            op.didChangeValue(forKey: "unknown")
            quietPeriod(0.05)
            log.append("first ends")
        }
        let second = loggingOperation("second", log)
        second.addDependency(first)
        queue.addOperations([first, second], waitUntilFinished: false)
        guard waitUntilFinished(second) else { return }
        #expect(log.snapshot == ["first ends", "second"])
    }

    // MARK: - O6: BlockOperation

    @Test func O6_blockOperationFinishesOnlyWhenEveryBlockReturned() {
        let done = Recorder<Int>()
        let operation = BlockOperation {
            quietPeriod(0.03)
            done.append(0)
        }
        for index in 1..<4 {
            operation.addExecutionBlock {
                quietPeriod(0.01 * Double(index))
                done.append(index)
            }
        }
        #expect(operation.executionBlocks.count == 4)
        let seenByCompletion = Locked<[Int]>([])
        operation.completionBlock = { seenByCompletion.withLock { $0 = done.snapshot } }
        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(done.snapshot.sorted() == [0, 1, 2, 3])
        #expect(eventually { !seenByCompletion.withLock { $0 }.isEmpty }, "\(runtimeUnderTest): the completion block did not run")
        #expect(seenByCompletion.withLock { $0 }.sorted() == [0, 1, 2, 3],
                "\(runtimeUnderTest): the operation finished before every block returned")

        // By hand: start() returns after all blocks returned.
        let counter = Counter()
        let byHand = BlockOperation { counter.increment() }
        for _ in 0..<5 { byHand.addExecutionBlock { counter.increment() } }
        byHand.start()
        #expect(counter.current == 6)
        #expect(byHand.isFinished)
    }

    @Test func O6_blockOperationWithoutBlocksFinishes() {
        let operation = BlockOperation()
        #expect(operation.executionBlocks.isEmpty)
        let queue = OperationQueue()
        queue.addOperation(operation)
        waitUntilFinished(operation)
        #expect(operation.isFinished)
    }

    // MARK: - O7: completion block

    @Test(.tags(.deliberateDifference))
    func O7_deliberateDifference_completionBlockRunsOnceAfterFinishingAndIsThenCleared() {
        let runs = Counter()
        let sawFinished = Locked<Bool?>(nil)
        let operation = BlockOperation {}
        operation.completionBlock = { [unowned operation] in
            sawFinished.withLock { $0 = operation.isFinished }
            runs.increment()
        }
        #expect(operation.completionBlock != nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(eventually { runs.current == 1 }, "\(runtimeUnderTest): the completion block ran \(runs.current) times")
        #expect(sawFinished.withLock { $0 } == true, "\(runtimeUnderTest): the completion block ran before the operation was finished")
        deliberateDifference("Foundation on Linux: completionBlock keeps the closure after it ran") {
            #expect(operation.completionBlock == nil, "\(runtimeUnderTest): the completion block is released once it has started")
        }
    }

    @Test func O7_completionBlockRunsOnceAfterFinishingEvenWhenCancelled() {
        let queue = OperationQueue()
        let runs = Counter()
        let mainRuns = Counter()
        let operation = BlockOperation { mainRuns.increment() }
        operation.completionBlock = { runs.increment() }
        operation.cancel()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(eventually { runs.current == 1 }, "\(runtimeUnderTest): the completion block ran \(runs.current) times")
        #expect(mainRuns.current == 0)

        // By hand, cancelled: start() retires it and runs the completion block once.
        let byHand = BlockOperation { mainRuns.increment() }
        let byHandRuns = Counter()
        byHand.completionBlock = { byHandRuns.increment() }
        byHand.cancel()
        byHand.start()
        byHand.start()
        #expect(eventually { byHandRuns.current == 1 }, "\(runtimeUnderTest): the completion block ran \(byHandRuns.current) times")
        #expect(mainRuns.current == 0)
    }

    @Test func O7_completionBlockOfAnAsynchronousOperationRunsOnceAfterCompleteOperation() {
        let release = Latch()
        let runs = Counter()
        let operation = heldMyOperation(release)
        let sawFinished = Locked<Bool?>(nil)
        operation.completionBlock = { [unowned operation] in
            sawFinished.withLock { $0 = operation.isFinished }
            runs.increment()
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitFor(operation.mainStarted, "MyOperation.main to start") else { release.open(); return }
        #expect(runs.current == 0)
        release.open()
        guard waitUntilFinished(operation) else { return }
        #expect(eventually { runs.current == 1 }, "\(runtimeUnderTest): the completion block ran \(runs.current) times")
        #expect(sawFinished.withLock { $0 } == true)
    }

    // MARK: - O9: waitUntilFinished

    @Test func O9_waitUntilFinishedBlocksUntilTheOperationFinished() {
        let release = Latch()
        let operation = heldMyOperation(release)
        let queue = OperationQueue()
        queue.addOperation(operation)
        let waiters = (0..<2).map { _ in onNewThread { operation.waitUntilFinished() } }
        quietPeriod()
        #expect(waiters.allSatisfy { !$0.isOpen }, "\(runtimeUnderTest): waitUntilFinished() returned before the operation finished")
        release.open()
        for waiter in waiters { waitFor(waiter, "waitUntilFinished() to return") }
        #expect(operation.isFinished)
        // On a finished operation it returns at once.
        waitUntilFinished(operation, seconds: 5)
    }

    // MARK: - O10: name

    @Test func O10_nameIsNilByDefaultAndFreeText() {
        let operation = BlockOperation {}
        #expect(operation.name == nil)
        operation.name = "décodage « 1 »"
        #expect(operation.name == "décodage « 1 »")
        operation.name = nil
        #expect(operation.name == nil)
    }

    // MARK: - O11: start() of a finished operation; cancelled operation in no queue

    @Test func O11_startOnAFinishedOperationDoesNothing() {
        let runs = Counter()
        let completions = Counter()
        let operation = BlockOperation { runs.increment() }
        operation.completionBlock = { completions.increment() }
        operation.start()
        operation.start()
        operation.start()
        #expect(runs.current == 1)
        #expect(eventually { completions.current == 1 }, "\(runtimeUnderTest): the completion block ran \(completions.current) times")
        #expect(operation.isFinished)
    }

    @Test func O11_cancelledOperationInNoQueueIsReadyButNotFinishedUntilStarted() {
        let runs = Counter()
        let dependency = BlockOperation {}
        let operation = BlockOperation { runs.increment() }
        operation.addDependency(dependency)
        #expect(!operation.isReady)
        operation.cancel()
        #expect(operation.isReady, "\(runtimeUnderTest): a cancelled operation is ready")
        #expect(!operation.isFinished, "\(runtimeUnderTest): a cancelled operation in no queue finishes only when started")
        #expect(!operation.isExecuting)
        operation.start()
        #expect(operation.isFinished && runs.current == 0)
    }

    // MARK: - O12: custom readiness

    @Test func O12_customReadinessHoldsAQueuedOperationUntilItPostsIsReady() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gated = GatedOperation()
        gated.name = "gated"
        #expect(!gated.isReady)
        let laterRan = Latch()
        queue.addOperation(gated)
        queue.addOperation(signallingOperation(laterRan, name: "later"))
        // Readiness before order: the operation added later runs while the gated one waits.
        guard waitFor(laterRan, "the ready operation added after the gated one to run") else { gated.openGate(); return }
        quietPeriod()
        #expect(!gated.ran.isOpen, "\(runtimeUnderTest): a queued operation ran while its isReady was false")
        #expect(!gated.isExecuting && !gated.isFinished)
        #expect(gated.readinessReads.current > 0)
        gated.openGate()
        waitFor(gated.ran, "the gated operation to run after it posted isReady")
        waitUntilFinished(gated)
    }

    @Test func O12_customReadinessAlreadyTrueWhenAddedRunsAtOnce() {
        let gated = GatedOperation()
        gated.openGate(announce: false)
        let queue = OperationQueue()
        queue.addOperation(gated)
        waitFor(gated.ran, "an operation whose custom isReady is true to run")
    }

    // O8: a cancelled operation that has not started becomes ready at once. Foundation on Linux
    // asks the isReady override, which still reads false, and never retires it.
    @Test(.tags(.deliberateDifference))
    func O12_O8_deliberateDifference_cancellingAnOperationHeldByCustomReadinessRetiresIt() {
        let queue = OperationQueue()
        let gated = GatedOperation()
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan)
        dependent.addDependency(gated)
        queue.addOperation(gated)
        queue.addOperation(dependent)
        quietPeriod()
        #expect(!gated.ran.isOpen)
        gated.cancel()
        deliberateDifference("Foundation on Linux: a cancelled operation whose isReady override reads false is never retired") {
            guard waitFor(dependentRan, "the dependent of a cancelled, not-ready operation to run",
                          seconds: Deadline.differenceSeconds) else { return }
            #expect(gated.isFinished && gated.isCancelled, "\(runtimeUnderTest)")
        }
        if onFoundation { gated.openGate() }  // lets Foundation retire it, and run its dependent
        waitFor(dependentRan, "the dependent of the cancelled operation to run")
        #expect(!gated.ran.isOpen, "\(runtimeUnderTest): main() of a cancelled operation ran")
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func O12_gatesOpenedWhileTheQueueLooksAtThemRunEveryOperationExactlyOnce() {
        var random = SeededGenerator("O12_gatesOpenedWhileTheQueueLooksAtThemRunEveryOperationExactlyOnce")
        let count = 200
        let operations = (0..<count).map { index -> GatedOperation in
            let operation = GatedOperation()
            operation.name = "gated\(index)"
            return operation
        }
        let openOrder = Array(0..<count).shuffled(using: &random)
        let queue = OperationQueue()
        let opener = onNewThread {
            for (step, index) in openOrder.enumerated() {
                operations[index].openGate()
                if step % 3 == 0 { sched_yield() }
            }
        }
        for operation in operations { queue.addOperation(operation) }
        waitFor(opener, "the thread opening the gates")
        guard waitUntilAllOperationsAreFinished(queue) else {
            Issue.record("\(runtimeUnderTest): not run: \(operations.filter { !$0.ran.isOpen }.map { $0.name ?? "?" }) (seed \(random.seed))")
            return
        }
        for operation in operations {
            #expect(operation.ran.arrivals == 1, "\(runtimeUnderTest): \(operation) ran \(operation.ran.arrivals) times (seed \(random.seed))")
            #expect(operation.isFinished)
        }
    }

    // MARK: - Identity and description

    // The description with the name and the state is ours (Apple's and Foundation's describe
    // class and address only).
    @Test(.tags(.deliberateDifference))
    func O10_deliberateDifference_operationsAreHashableByIdentityAndDescribeTypeNameAndState() {
        let first = BlockOperation {}
        let second = BlockOperation {}
        first.name = "same"
        second.name = "same"
        #expect(first == first)
        #expect(first != second, "\(runtimeUnderTest): equal names do not make operations equal")
        let set: Set<Operation> = [first, second, first, MyOperation()]
        #expect(set.count == 3)
        #expect(set.contains(first) && set.contains(second))

        #expect(first.description.contains("BlockOperation"), "\(runtimeUnderTest): \(first.description)")
        #expect(String(describing: MyOperation()).contains("MyOperation"), "\(runtimeUnderTest)")
        let why: Comment = "Foundation on Linux: an operation's description is <Class: address>, without name or state"
        deliberateDifference(why) {
            #expect(first.description.contains("\"same\""), "\(runtimeUnderTest): \(first.description)")
        }

        let release = Latch()
        let running = heldMyOperation(release)
        running.name = "held"
        let queue = OperationQueue()
        queue.isSuspended = true
        queue.addOperation(running)
        deliberateDifference(why) {
            #expect(running.description.contains("queued"), "\(runtimeUnderTest): \(running.description)")
        }
        queue.isSuspended = false
        first.cancel()
        deliberateDifference(why) {
            #expect(first.description.contains("cancelled"), "\(runtimeUnderTest): \(first.description)")
        }
        first.start()
        deliberateDifference(why) {
            #expect(first.description.contains("finished"), "\(runtimeUnderTest): \(first.description)")
        }
        release.open()
        waitUntilFinished(running)
    }

    @Test(.tags(.deliberateDifference))
    func O2_deliberateDifference_descriptionOfARunningOperationSaysExecuting() {
        let release = Latch()
        let started = Latch()
        let operation = BlockOperation {
            started.open()
            release.wait()
        }
        operation.name = "busy"
        let queue = OperationQueue()
        queue.addOperation(operation)
        guard waitFor(started, "the operation to start") else { release.open(); return }
        let text = operation.description
        release.open()
        #expect(text.contains("BlockOperation"), "\(runtimeUnderTest): \(text)")
        deliberateDifference("Foundation on Linux: an operation's description is <Class: address>, without name or state") {
            #expect(text.contains("\"busy\"") && text.contains("executing"), "\(runtimeUnderTest): \(text)")
        }
        waitUntilFinished(operation)
    }
}
