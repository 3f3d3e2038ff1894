// OperationTests.swift — operation objects (SEMANTICS O1, O4, O8, O12, E1) where they need
// more than Foundation's API: the guide's invocation-operation sample (InvocationOperation),
// errors thrown by invocation operations, and typed observation (`observe(_:)`), of the
// default start(), of cancel() and of custom readiness. The guide's other samples and every
// test that uses only Foundation's API are behaviour tests, run over Operations and over
// Foundation: Tests/BehaviourTests/OperationTests.swift and GuideSubclassSampleTests.swift.
import Glibc
import Operations
import Testing

// MARK: - "Creating an NSInvocationOperation Object"

/// The guide's `MyCustomClass` with `taskWithData:` and `myTaskMethod:`.
final class MyCustomClass: @unchecked Sendable {
    let processed = Recorder<String>()

    func taskWithData(_ data: String) -> InvocationOperation<MyCustomClass, String, Int> {
        let theOp = InvocationOperation(target: self, method: MyCustomClass.myTaskMethod, argument: data)
        return theOp
    }

    // This is the method that does the actual work of the task.
    func myTaskMethod(_ data: String) -> Int {
        processed.append(data)
        return data.count
    }
}

/// Custom readiness (O12): ready only when `super.isReady` and its gate is open. Opening the gate
/// posts the "isReady" change the guide asks for.
final class GatedOperation: Operations.Operation, @unchecked Sendable {
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

// MARK: - Tests

@Suite(.sharesProcess) struct OperationTests {
    // MARK: - O1: invocation operations

    @Test func O1_guideInvocationSampleCallsTheTargetMethodWithItsData() {
        let target = MyCustomClass()
        let queued = target.taskWithData("queued")
        let queue = Operations.OperationQueue()
        queue.addOperation(queued)
        guard waitUntilFinished(queued) else { return }
        #expect(queued.result == 6)
        #expect(queued.error == nil)

        let byHand = target.taskWithData("by hand")
        byHand.start()
        #expect(byHand.result == 7)
        #expect(Set(target.processed.snapshot) == ["queued", "by hand"])
    }

    // MARK: - O4: the default start()

    @Test func O4_defaultStartMarksExecutingAroundMainThenFinishedWithKVOInOrder() {
        let events = Recorder<String>()
        let operation = Operations.BlockOperation {}
        operation.addExecutionBlock {}  // two blocks: they run concurrently, main still brackets both
        let inMain = Locked<(executing: Bool, finished: Bool)?>(nil)
        let probe = ProbeOperation { op in inMain.withLock { $0 = (op.isExecuting, op.isFinished) } }
        let tokens = [
            probe.observe(.isExecuting) { op in events.append("isExecuting executing=\(op.isExecuting) finished=\(op.isFinished)") },
            probe.observe(.isFinished) { op in events.append("isFinished executing=\(op.isExecuting) finished=\(op.isFinished)") },
        ]
        #expect(!probe.isExecuting && !probe.isFinished && probe.isReady)
        probe.start()
        #expect(inMain.withLock { $0 }.map { $0.executing && !$0.finished } == true,
                "inside main(): \(String(describing: inMain.withLock { $0 }))")
        #expect(events.snapshot == [
            "isExecuting executing=true finished=false",
            "isExecuting executing=false finished=true",
            "isFinished executing=false finished=true",
        ])
        withExtendedLifetime(tokens) {}
        operation.start()
        #expect(operation.isFinished)
    }

    @Test func O4_defaultStartOfACancelledOperationFinishesWithoutRunningMainOrExecuting() {
        let ranMain = Counter()
        let operation = ProbeOperation { _ in ranMain.increment() }
        let executingChanges = Counter()
        let token = operation.observe(.isExecuting) { _ in executingChanges.increment() }
        operation.cancel()
        operation.start()
        #expect(operation.isFinished && operation.isCancelled && !operation.isExecuting)
        #expect(ranMain.current == 0)
        #expect(executingChanges.current == 0, "a cancelled operation never became executing")
        withExtendedLifetime(token) {}
    }

    // MARK: - O8: cancel() sets a flag; idempotent

    @Test func O8_cancelIsIdempotentAndOnlySetsAFlagOnARunningOperation() {
        let release = Latch()
        let started = Latch()
        let sawCancelled = Locked<Bool?>(nil)
        let operation = ProbeOperation { op in
            started.open()
            release.wait()
            sawCancelled.withLock { $0 = op.isCancelled }
        }
        let cancelChanges = Counter()
        let token = operation.observe(.isCancelled) { _ in cancelChanges.increment() }
        let queue = Operations.OperationQueue()
        queue.addOperation(operation)
        guard waitFor(started, "the operation to start") else { release.open(); return }
        operation.cancel()
        operation.cancel()
        #expect(operation.isCancelled)
        #expect(operation.isExecuting && !operation.isFinished, "cancel() interrupted a running operation")
        release.open()
        guard waitUntilFinished(operation) else { return }
        #expect(sawCancelled.withLock { $0 } == true)
        #expect(cancelChanges.current == 1, "isCancelled changed \(cancelChanges.current) times")
        withExtendedLifetime(token) {}
    }

    // MARK: - O12: custom readiness

    @Test func O12_isReadyChangeIsObservable() {
        let gated = GatedOperation()
        let changes = Counter()
        let token = gated.observe(.isReady) { op in if op.isReady { changes.increment() } }
        gated.openGate()
        #expect(changes.current == 1)
        withExtendedLifetime(token) {}
    }

    @Test(arguments: ["observed before its dependencies were added", "observed after"])
    func O12_D1_observersOfIsReadyHearWhenTheLastDependencyFinishes(_ when: String) {
        // A plain BlockOperation (the queue's fast path makes it ready in the core alone) and a
        // subclass: both post "isReady" to their observers when their last dependency finishes,
        // in a queue or in none (issue 13, item 2). Our addition: typed observation.
        for subclass in [false, true] {
            let first = BlockOperation {}
            let second = BlockOperation {}
            let operation: Operations.Operation = subclass ? GatedOperation() : BlockOperation {}
            let readyChanges = Recorder<Bool>()
            var token: OperationObservation?
            if when.hasSuffix("added") { token = operation.observe(.isReady) { readyChanges.append($0.isReady) } }
            operation.addDependency(first)
            operation.addDependency(second)
            if token == nil { token = operation.observe(.isReady) { readyChanges.append($0.isReady) } }
            let queue = OperationQueue()
            queue.addOperation(first)
            waitUntilFinished(first)
            #expect(readyChanges.snapshot.isEmpty, "announced with a dependency left (subclass: \(subclass))")
            queue.addOperation(second)
            waitUntilFinished(second)
            #expect(eventually { readyChanges.count == 1 }, "no isReady change once the last dependency finished (subclass: \(subclass))")
            #expect(readyChanges.snapshot == [!subclass], "the change reads isReady through the getter (subclass: \(subclass))")
            withExtendedLifetime(token) {}
        }
    }

    // MARK: - InvocationOperation (O1) and errors in work (E1)

    final class Calculator: @unchecked Sendable {
        struct OddNumber: Error, Equatable { let value: Int }
        func half(_ value: Int) throws -> Int {
            if value % 2 != 0 { throw OddNumber(value: value) }
            return value / 2
        }
    }

    @Test func O1_E1_invocationOperationKeepsTheResultOrTheThrownErrorAndTheQueueGoesOn() throws {
        let calculator = Calculator()
        let even = InvocationOperation(target: calculator, method: Calculator.half, argument: 84)
        let odd = InvocationOperation(target: calculator, method: Calculator.half, argument: 7)
        let after = InvocationOperation(target: calculator, method: Calculator.half, argument: 2)
        after.addDependency(odd)
        let queue = Operations.OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.addOperations([odd, even, after], waitUntilFinished: false)
        guard waitUntilAllOperationsAreFinished(queue) else { return }

        #expect(even.result == 42)
        #expect(even.error == nil)
        #expect(try even.value() == 42)

        #expect(odd.result == nil)
        #expect((odd.error as? Calculator.OddNumber) == Calculator.OddNumber(value: 7))
        #expect(throws: Calculator.OddNumber(value: 7)) { try odd.value() }
        #expect(odd.isFinished && !odd.isCancelled, "a thrown error finishes the operation normally")
        #expect(after.result == 1, "the queue kept running after an operation's work threw")
    }

    @Test func O1_invocationOperationCancelledBeforeItRanHasNeitherResultNorError() throws {
        let calculator = Calculator()
        let operation = InvocationOperation(target: calculator, method: Calculator.half, argument: 4)
        #expect(operation.result == nil && operation.error == nil)
        operation.cancel()
        operation.start()
        #expect(operation.isFinished)
        #expect(operation.result == nil && operation.error == nil)
        #expect(try operation.value() == nil)
    }

    // MARK: - Typed observation

    @Test func O4_observingIsFinishedFiresOnceForAQueuedOperation() {
        let operation = Operations.BlockOperation {}
        let calls = Recorder<Bool>()
        let token = operation.observe(.isFinished) { op in calls.append(op.isFinished) }
        let queue = Operations.OperationQueue()
        queue.addOperation(operation)
        guard waitUntilFinished(operation) else { return }
        #expect(calls.snapshot == [true])
        withExtendedLifetime(token) {}
    }

    @Test func O4_invalidatedOrReleasedObservationIsNotCalled() {
        let calls = Counter()
        let operation = Operations.BlockOperation {}
        let invalidated = operation.observe(.isExecuting) { _ in calls.increment() }
        invalidated.invalidate()
        do {
            _ = operation.observe(.isFinished) { _ in calls.increment() }  // released at once
        }
        let kept = Counter()
        let token = operation.observe(.isFinished) { _ in kept.increment() }
        operation.start()
        #expect(calls.current == 0, "an invalidated or released observation was called")
        #expect(kept.current == 1)
        withExtendedLifetime(token) {}
    }

    @Test func O4_observersOfOtherKeysSeeTheirChanges() {
        let operation = Operations.BlockOperation {}
        let keys = Recorder<String>()
        let tokens = Operations.Operation.ObservationKey.allCases.map { key in
            operation.observe(key) { _ in keys.append(key.rawValue) }
        }
        operation.queuePriority = .high
        operation.completionBlock = {}
        let dependency = Operations.BlockOperation {}
        operation.addDependency(dependency)
        operation.removeDependency(dependency)
        operation.cancel()
        operation.start()
        let seen = Set(keys.snapshot)
        #expect(seen.isSuperset(of: ["queuePriority", "completionBlock", "dependencies", "isCancelled", "isReady", "isFinished"]),
                "\(keys.snapshot)")
        withExtendedLifetime(tokens) {}
    }
}

/// An operation whose `main` calls a closure with itself.
final class ProbeOperation: Operations.Operation, @unchecked Sendable {
    private let body: @Sendable (Operations.Operation) -> Void
    init(_ body: @escaping @Sendable (Operations.Operation) -> Void) {
        self.body = body
        super.init()
    }
    override func main() { body(self) }
}
