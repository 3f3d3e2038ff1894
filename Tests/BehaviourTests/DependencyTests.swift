// DependencyTests.swift — dependencies between operations (SEMANTICS D1, D2, D3, D5, and O8 for
// cancelled operations in a graph): chains, diamonds, random graphs, across queues, by hand,
// removing an unfinished dependency, and the order `dependencies` reports.
import Synchronization
import Testing

/// Start and end tickets of operations, from one shared sequence.
final class Timeline: @unchecked Sendable {
    private let state = Locked((next: 0, starts: [String: Int](), ends: [String: Int]()))

    func start(_ name: String) { state.withLock { $0.starts[name] = $0.next; $0.next += 1 } }
    func end(_ name: String) { state.withLock { $0.ends[name] = $0.next; $0.next += 1 } }
    func startTicket(_ name: String) -> Int? { state.withLock { $0.starts[name] } }
    func endTicket(_ name: String) -> Int? { state.withLock { $0.ends[name] } }

    /// An operation named `name` that records its start and end around a short pause.
    func operation(_ name: String, pause: Double = 0) -> BlockOperation {
        let operation = BlockOperation { [self] in
            start(name)
            if pause > 0 { quietPeriod(pause) }
            end(name)
        }
        operation.name = name
        return operation
    }

    /// Expects `dependent` to have started after `dependency` ended.
    func expectOrder(_ dependency: String, before dependent: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let end = endTicket(dependency), let start = startTicket(dependent) else {
            Issue.record("\(runtimeUnderTest): \(dependency) or \(dependent) did not run", sourceLocation: sourceLocation)
            return
        }
        #expect(end < start, "\(dependent) started (ticket \(start)) before its dependency \(dependency) ended (ticket \(end))",
                sourceLocation: sourceLocation)
    }
}

@Suite(.sharesProcess) struct DependencyTests {
    // MARK: - D1

    @Test func D1_chainRunsInDependencyOrderWhateverOrderItWasAddedIn() {
        let timeline = Timeline()
        let operations = (0..<10).map { timeline.operation("op\($0)") }
        for index in 1..<operations.count { operations[index].addDependency(operations[index - 1]) }
        let queue = OperationQueue()
        for operation in operations.reversed() { queue.addOperation(operation) }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        for index in 1..<operations.count { timeline.expectOrder("op\(index - 1)", before: "op\(index)") }
    }

    @Test func D1_diamondRunsTheJoinAfterBothBranches() {
        let timeline = Timeline()
        let top = timeline.operation("top", pause: 0.01)
        let left = timeline.operation("left", pause: 0.02)
        let right = timeline.operation("right", pause: 0.005)
        let bottom = timeline.operation("bottom")
        left.addDependency(top)
        right.addDependency(top)
        bottom.addDependency(left)
        bottom.addDependency(right)
        #expect(!bottom.isReady && !left.isReady && top.isReady)
        let queue = OperationQueue()
        queue.addOperations([bottom, right, left, top], waitUntilFinished: false)
        guard waitUntilFinished(bottom) else { return }
        timeline.expectOrder("top", before: "left")
        timeline.expectOrder("top", before: "right")
        timeline.expectOrder("left", before: "bottom")
        timeline.expectOrder("right", before: "bottom")
    }

    @Test func D1_D2_randomGraphAcrossTwoQueuesRespectsEveryEdge() {
        var random = SeededGenerator("D1_D2_randomGraphAcrossTwoQueuesRespectsEveryEdge")
        let timeline = Timeline()
        let count = 60
        let operations = (0..<count).map { timeline.operation("op\($0)") }
        let edges = addRandomDependencies(operations, using: &random)
        let queues = [OperationQueue(), OperationQueue()]
        queues[1].maxConcurrentOperationCount = 1
        for index in Array(0..<count).shuffled(using: &random) {
            queues[Int.random(in: 0...1, using: &random)].addOperation(operations[index])
        }
        for operation in operations where !waitUntilFinished(operation) { return }
        for (dependency, dependent) in edges { timeline.expectOrder("op\(dependency)", before: "op\(dependent)") }
    }

    @Test func D1_operationWithManyDependenciesWaitsForAllOfThem() {
        let timeline = Timeline()
        let dependencies = (0..<20).map { timeline.operation("dep\($0)", pause: $0 % 5 == 0 ? 0.01 : 0) }
        let join = timeline.operation("join")
        for dependency in dependencies { join.addDependency(dependency) }
        let queue = OperationQueue()
        queue.addOperation(join)
        queue.addOperations(dependencies, waitUntilFinished: false)
        guard waitUntilFinished(join) else { return }
        for index in 0..<20 { timeline.expectOrder("dep\(index)", before: "join") }
    }

    @Test func D1_O11_dependentOfACancelledOperationInNoQueueWaitsUntilThatOperationIsStarted() {
        let dependency = BlockOperation {}
        dependency.name = "cancelled, in no queue"
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan, name: "dependent")
        dependent.addDependency(dependency)
        let queue = OperationQueue()
        queue.addOperation(dependent)
        dependency.cancel()
        quietPeriod()
        // D1: "not ready until op is finished (finished or cancelled-and-retired)"; O11: a
        // cancelled operation in no queue is not finished until someone calls start().
        #expect(!dependency.isFinished)
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest): the dependent ran although its cancelled dependency is not finished")
        dependency.start()
        #expect(dependency.isFinished)
        waitFor(dependentRan, "the dependent after its cancelled dependency was started (retired)")
    }

    @Test func D1_O8_randomGraphWithConcurrentCancellationsRunsOrRetiresEveryOperationOnceInOrder() {
        var random = SeededGenerator("D1_O8_randomGraphWithConcurrentCancellationsRunsOrRetiresEveryOperationOnceInOrder")
        let count = 150
        let mainRuns = (0..<count).map { _ in Counter() }
        let completions = (0..<count).map { _ in Counter() }
        let allCompleted = Latch()
        // Each body checks, as it starts, that every dependency of its operation is finished.
        // (Not the dependency's completion block: Apple orders it after the finish only, and
        // Foundation runs it on another thread after releasing the dependents.)
        let dependenciesOf = Locked<[[Operation]]>([])
        let startedEarly = Recorder<String>()
        let operations = (0..<count).map { index -> BlockOperation in
            let name = "op\(index)"
            let operation = BlockOperation {
                let unfinished = dependenciesOf.withLock { $0[index] }.filter { !$0.isFinished }
                if !unfinished.isEmpty {
                    startedEarly.append("\(name) started before its dependencies \(unfinished.map { $0.name ?? "?" }) finished")
                }
                mainRuns[index].increment()
            }
            operation.name = name
            operation.completionBlock = {
                completions[index].increment()
                allCompleted.arrive()
            }
            return operation
        }
        let edges = addRandomDependencies(operations, using: &random)
        dependenciesOf.withLock { $0 = operations.map(\.dependencies) }
        defer { dependenciesOf.withLock { $0 = [] } }  // the bodies hold it: no cycle left behind
        let cancelled = Array(0..<count).shuffled(using: &random).prefix(count / 4)
        let cancelledEarly = cancelled.prefix(8)
        let cancelledLate = Array(cancelled.dropFirst(8))
        for index in cancelledEarly { operations[index].cancel() }
        let queues = [OperationQueue(), OperationQueue(), OperationQueue()]
        queues[1].maxConcurrentOperationCount = 1
        queues[2].maxConcurrentOperationCount = 2
        queues[2].qualityOfService = .utility
        let placement = (0..<count).map { _ in Int.random(in: 0..<queues.count, using: &random) }
        let addOrder = Array(0..<count).shuffled(using: &random)
        let canceller = onNewThread {
            for (step, index) in cancelledLate.enumerated() {
                operations[index].cancel()
                if step % 4 == 0 { sched_yield() }
            }
        }
        for index in addOrder { queues[placement[index]].addOperation(operations[index]) }
        waitFor(canceller, "the canceller thread")
        guard waitFor(allCompleted, "every operation of the graph to finish", count: count) else {
            let unfinished = operations.filter { !$0.isFinished }.map(\.description)
            Issue.record("\(runtimeUnderTest): unfinished: \(unfinished)")
            return
        }
        for index in 0..<count {
            let operation = operations[index]
            #expect(completions[index].current == 1, "\(runtimeUnderTest): completion block of op\(index) ran \(completions[index].current) times")
            #expect(mainRuns[index].current <= 1, "\(runtimeUnderTest): main() of op\(index) ran \(mainRuns[index].current) times")
            #expect(operation.isFinished && !operation.isExecuting)
            if mainRuns[index].current == 0 {
                #expect(operation.isCancelled, "\(runtimeUnderTest): op\(index) finished without running main() but was not cancelled")
            }
            if cancelledEarly.contains(index) {
                #expect(mainRuns[index].current == 0, "\(runtimeUnderTest): op\(index) was cancelled before it was added but ran")
            }
        }
        #expect(!edges.isEmpty)
        #expect(startedEarly.snapshot.isEmpty, "\(runtimeUnderTest): \(startedEarly.snapshot) (seed \(random.seed))")
    }

    @Test func D1_dependencyAddedToAQueuedOperationThatIsNotReadyYetHoldsItToo() {
        let first = BlockOperation {}
        let second = BlockOperation {}
        let ran = Latch()
        let operation = signallingOperation(ran, name: "waits for two")
        operation.addDependency(first)
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.addDependency(second)  // it is not ready yet, so this one holds it as well
        #expect(operation.dependencies == [first, second])
        first.start()
        quietPeriod()
        #expect(!ran.isOpen, "\(runtimeUnderTest): the operation ran although a dependency added while it waited has not finished")
        #expect(!operation.isReady)
        second.start()
        waitFor(ran, "the operation after both dependencies finished")
    }

    @Test func D1_dependencyOnAnOperationThatAlreadyFinishedIsSatisfied() {
        let finished = BlockOperation {}
        finished.start()
        let operation = BlockOperation {}
        operation.addDependency(finished)
        #expect(operation.isReady)
        #expect(operation.dependencies == [finished])
        let queue = OperationQueue()
        queue.addOperation(operation)
        waitUntilFinished(operation)
    }

    // Regression: a dependency added twice counts once, as in Foundation (the second add is
    // ignored), so one removeDependency(_:) frees the receiver (D3: Foundation on Linux never
    // counts a removed unfinished dependency down).
    @Test(.tags(.deliberateDifference))
    func D1_D5_deliberateDifference_addingTheSameDependencyTwiceRecordsItOnce() {
        let dependency = BlockOperation {}
        let operation = BlockOperation {}
        operation.addDependency(dependency)
        operation.addDependency(dependency)
        #expect(operation.dependencies == [dependency], "\(runtimeUnderTest): Foundation ignores a dependency that is already there")
        operation.removeDependency(dependency)
        #expect(operation.dependencies.isEmpty)
        deliberateDifference("Foundation on Linux: removeDependency(_:) of an unfinished dependency leaves it counted") {
            #expect(operation.isReady, "\(runtimeUnderTest): after removing its only dependency the operation is ready")
        }
    }

    // MARK: - D2

    @Test func D2_dependenciesWorkAcrossQueues() {
        let timeline = Timeline()
        let first = OperationQueue()
        let second = OperationQueue()
        second.qualityOfService = .utility
        let a = timeline.operation("a", pause: 0.02)
        let b = timeline.operation("b")
        let c = timeline.operation("c")
        b.addDependency(a)
        c.addDependency(b)
        second.addOperation(c)
        second.addOperation(a)
        first.addOperation(b)
        guard waitUntilFinished(c) else { return }
        timeline.expectOrder("a", before: "b")
        timeline.expectOrder("b", before: "c")
    }

    @Test func D2_operationStartedByHandAfterItsQueuedDependencyFinished() {
        let queue = OperationQueue()
        let dependency = BlockOperation {}
        let runs = Counter()
        let byHand = BlockOperation { runs.increment() }
        byHand.addDependency(dependency)
        #expect(!byHand.isReady)
        queue.addOperation(dependency)
        guard waitUntilFinished(dependency) else { return }
        #expect(byHand.isReady, "\(runtimeUnderTest): ready once its dependency finished")
        byHand.start()
        #expect(runs.current == 1 && byHand.isFinished)
    }

    @Test func D2_queuedOperationWaitsForADependencyRunByHand() {
        let byHand = BlockOperation {}
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan)
        dependent.addDependency(byHand)
        let queue = OperationQueue()
        queue.addOperation(dependent)
        quietPeriod()
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest): the dependent ran before its dependency was started by hand")
        byHand.start()
        waitFor(dependentRan, "the queued dependent after its dependency finished by hand")
    }

    @Test func D2_operationsRunByHandHonourDependenciesBetweenThem() {
        let log = Recorder<String>()
        let a = loggingOperation("a", log)
        let b = loggingOperation("b", log)
        b.addDependency(a)
        #expect(a.isReady && !b.isReady)
        a.start()
        #expect(b.isReady)
        b.start()
        #expect(log.snapshot == ["a", "b"])
    }

    // MARK: - D3

    // D3: "removeDependency of an unfinished dependency can make the receiver ready". Foundation
    // on Linux never counts a removed unfinished dependency down: its receiver never runs.
    @Test(.tags(.deliberateDifference))
    func D3_deliberateDifference_removingAnUnfinishedDependencyLetsTheReceiverRunWhileTheDependencyIsStillBlocked() {
        let suspended = OperationQueue()
        suspended.isSuspended = true
        let running = OperationQueue()
        let dependencyRan = Latch()
        let dependency = signallingOperation(dependencyRan, name: "dependency")
        let receiverRan = Latch()
        let receiver = signallingOperation(receiverRan, name: "receiver")
        receiver.addDependency(dependency)
        suspended.addOperation(dependency)
        running.addOperation(receiver)
        quietPeriod()
        #expect(!receiverRan.isOpen && !receiver.isReady)

        receiver.removeDependency(dependency)
        #expect(receiver.dependencies.isEmpty)
        deliberateDifference("Foundation on Linux: removeDependency(_:) of an unfinished dependency leaves it counted: the receiver never runs") {
            waitFor(receiverRan, "the receiver to run after removeDependency", seconds: Deadline.differenceSeconds)
        }
        #expect(!dependency.isFinished && !dependencyRan.isOpen, "\(runtimeUnderTest): the dependency is still held by its suspended queue")
        if onFoundation { receiver.cancel() }  // retires it: Foundation's queue would hold it forever

        suspended.isSuspended = false
        waitFor(dependencyRan, "the dependency after its queue was resumed")
        waitUntilAllOperationsAreFinished(suspended)
        waitUntilAllOperationsAreFinished(running)
    }

    // Found by the liveness fuzzer's grammar 2 (seed 2397465958266045583): a plain operation
    // given a dependency while it waits ready in its queue is held back by it (late); its queue
    // takes it, finds it not ready and holds it. A second dependency added then must release it
    // too once both finished: the core accepted that one (it held the task) and nobody
    // announced its finish, so the operation waited for ever.
    @Test func D3_aSecondDependencyOfAnOperationHeldForALateOneReleasesItWhenBothFinish() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Latch()
        let held = BlockOperation { ran.open() }
        let first = BlockOperation {}
        let second = BlockOperation {}
        queue.addOperation(held)           // ready in its queue
        held.addDependency(first)          // a late dependency: holds it back
        queue.isSuspended = false          // the queue takes it, finds it not ready, holds it
        quietPeriod()                      // (time for that; the test passes either way if not)
        held.addDependency(second)
        #expect(!held.isReady)
        first.start()
        second.start()
        waitFor(ran, "the operation held for two late dependencies, once both finished")
        waitUntilAllOperationsAreFinished(queue)
        withExtendedLifetime((first, second)) {}
    }

    @Test func D3_removingADependencyThatIsNotOneChangesNothing() {
        let a = BlockOperation {}
        let b = BlockOperation {}
        let stranger = BlockOperation {}
        b.addDependency(a)
        b.removeDependency(stranger)
        #expect(b.dependencies == [a])
        #expect(!b.isReady)
        a.start()
        #expect(b.isReady)
    }

    @Test func D3_removingAFinishedDependencyKeepsTheReceiverReady() {
        let a = BlockOperation {}
        let b = BlockOperation {}
        b.addDependency(a)
        a.start()
        #expect(b.isReady)
        b.removeDependency(a)
        #expect(b.isReady && b.dependencies.isEmpty)
        b.start()
        #expect(b.isFinished)
    }

    // MARK: - D5

    #if !BEHAVIOUR_ON_FOUNDATION
    // Not on Foundation: Foundation on Linux frees an operation's dependencies from its deinit,
    // recursively, so dropping a chain of 200,000 overflows the stack (SIGSEGV in
    // Foundation.Operation's deinit, 214,000 frames deep) and the test process dies.

    /// Counts the FreedCounted operations freed.
    final class FreedCount: Sendable { let count = Atomic<Int>(0) }
    /// An operation that counts its deinit in a FreedCount.
    final class FreedCounted: Operation, @unchecked Sendable {
        let freed: FreedCount
        init(_ freed: FreedCount) { self.freed = freed }
        deinit { freed.count.add(1, ordering: .relaxed) }
    }

    // Regression: each operation holds its dependencies, so dropping the end of a long chain
    // freed the chain recursively and overflowed the stack (the perf harness's W4 at 10^5).
    @Test func D1_aChainOfTwoHundredThousandOperationsIsFreedWithoutRecursion() {
        let count = 200_000
        let freed = FreedCount()
        do {
            var last: Operation?
            for _ in 0..<count {
                let operation = FreedCounted(freed)
                if let last { operation.addDependency(last) }
                last = operation
            }
            #expect(last?.dependencies.count == 1)
            last = nil // frees the whole chain
        }
        #expect(freed.count.load(ordering: .relaxed) == count, "\(runtimeUnderTest): operations of the chain freed")
    }

    // The same with two dependencies each (operation i waits for i-1 and i-2), and one
    // operation that waits for all the others: lists beyond the first dependency are freed
    // without recursion too.
    @Test func D1_aLadderAndAWideFanInAreFreedWithoutRecursion() {
        let count = 200_000
        let freed = FreedCount()
        do {
            var previous: Operation?
            var beforeThat: Operation?
            for _ in 0..<count {
                let operation = FreedCounted(freed)
                if let previous { operation.addDependency(previous) }
                if let beforeThat { operation.addDependency(beforeThat) }
                beforeThat = previous
                previous = operation
            }
            #expect(previous?.dependencies.count == 2)
            beforeThat = nil
            previous = nil // frees the whole ladder
        }
        #expect(freed.count.load(ordering: .relaxed) == count, "\(runtimeUnderTest): operations of the ladder freed")
        // Fewer for the fan-in: each add looks for the dependency in the list (duplicates count
        // once), so adding n costs n^2 / 2 comparisons.
        let fanIn = 2_000
        let wide = FreedCount()
        do {
            let sink = FreedCounted(wide)
            for _ in 0..<fanIn { sink.addDependency(FreedCounted(wide)) }
            #expect(sink.dependencies.count == fanIn)
        }
        #expect(wide.count.load(ordering: .relaxed) == fanIn + 1, "\(runtimeUnderTest): the fan-in freed")
    }

    // Not on Foundation either: its queue rescans every waiting operation each time one finishes
    // (quadratic: the chain of 200,000 is not done after 60 s), and freeing the finished chain
    // would overflow the stack as above.
    @Test func D1_aFinishedChainRunOnAQueueIsFreedWithoutRecursion() {
        let count = runningUnderThreadSanitizer ? 50_000 : 200_000
        let queue = OperationQueue()
        var chain: [Operation] = []
        chain.reserveCapacity(count)
        for index in 0..<count {
            let operation = BlockOperation {}
            if index > 0 { operation.addDependency(chain[index - 1]) }
            chain.append(operation)
        }
        queue.addOperations(chain, waitUntilFinished: false)
        guard waitUntilAllOperationsAreFinished(queue, seconds: 60) else { return }
        weak let first = chain[0]
        chain = [chain[count - 1]]
        chain = [] // the last operation holds the whole chain through its dependencies
        #expect(first == nil, "\(runtimeUnderTest): the first operation of the chain was freed")
    }
    #endif

    @Test func D5_dependenciesAreListedInTheOrderTheyWereAdded() {
        let a = BlockOperation {}
        let b = BlockOperation {}
        let c = BlockOperation {}
        let receiver = BlockOperation {}
        #expect(receiver.dependencies.isEmpty)
        receiver.addDependency(c)
        receiver.addDependency(a)
        receiver.addDependency(b)
        #expect(receiver.dependencies == [c, a, b])
        receiver.removeDependency(a)
        #expect(receiver.dependencies == [c, b])
        receiver.addDependency(a)
        #expect(receiver.dependencies == [c, b, a])
        // Finishing a dependency does not remove it from the list.
        c.start()
        #expect(receiver.dependencies == [c, b, a])
        // The first removed: the others keep their order; a second add of a later one is
        // ignored; the only one removed and added again.
        receiver.removeDependency(c)
        #expect(receiver.dependencies == [b, a])
        receiver.addDependency(a)
        #expect(receiver.dependencies == [b, a])
        receiver.removeDependency(a)
        receiver.removeDependency(b)
        #expect(receiver.dependencies.isEmpty)
        receiver.addDependency(b)
        #expect(receiver.dependencies == [b])
    }

    // The list keeps its first two entries apart from the rest (issue 36): removals at each
    // place, duplicates and re-adds keep the order, also past the length where duplicates are
    // found through an index.
    @Test func D5_theOrderHoldsAcrossEveryPlaceInTheList() {
        let ops = (0..<6).map { index -> BlockOperation in
            let operation = BlockOperation {}
            operation.name = "d\(index)"
            return operation
        }
        let receiver = BlockOperation {}
        for operation in ops { receiver.addDependency(operation) }
        #expect(receiver.dependencies == ops)
        receiver.addDependency(ops[1]) // a duplicate of the second: ignored
        receiver.addDependency(ops[4]) // a duplicate of one further on: ignored
        #expect(receiver.dependencies == ops)
        receiver.removeDependency(ops[1]) // the second: the rest move up
        #expect(receiver.dependencies == [ops[0], ops[2], ops[3], ops[4], ops[5]])
        receiver.removeDependency(ops[0]) // the first
        #expect(receiver.dependencies == [ops[2], ops[3], ops[4], ops[5]])
        receiver.removeDependency(ops[4]) // one further on
        #expect(receiver.dependencies == [ops[2], ops[3], ops[5]])
        receiver.addDependency(ops[0])
        #expect(receiver.dependencies == [ops[2], ops[3], ops[5], ops[0]])
        receiver.removeDependency(ops[3])
        receiver.removeDependency(ops[2])
        #expect(receiver.dependencies == [ops[5], ops[0]])
        receiver.removeDependency(ops[0]) // the second with nothing after it
        #expect(receiver.dependencies == [ops[5]])
        receiver.addDependency(ops[1])
        #expect(receiver.dependencies == [ops[5], ops[1]])

        // Wide: 300 dependencies, duplicates ignored, removals anywhere keep the order.
        let wide = (0..<300).map { _ in BlockOperation {} }
        let fanIn = BlockOperation {}
        for operation in wide { fanIn.addDependency(operation) }
        for operation in wide.reversed() { fanIn.addDependency(operation) }
        let listedOnce = fanIn.dependencies == wide
        #expect(listedOnce, "300 dependencies, each added twice, listed once in order")
        var expected = wide
        for position in [299, 150, 2, 1, 0] {
            fanIn.removeDependency(expected[position])
            expected.remove(at: position)
            let inOrder = fanIn.dependencies == expected
            #expect(inOrder, "the order after removing the dependency at \(position) of the wide list")
        }
        fanIn.addDependency(wide[0])
        fanIn.addDependency(wide[3]) // still there: ignored
        expected.append(wide[0])
        let inOrder = fanIn.dependencies == expected
        #expect(inOrder, "the wide list after adding a removed dependency again and a present one twice")

        // Pruned to one and grown again: a second add of the new one is still ignored, and
        // removing it removes it (the list's index of a wide list held only the entries past
        // the first two, so the new second one was added twice and could not be removed).
        for operation in expected.dropFirst() { fanIn.removeDependency(operation) }
        #expect(fanIn.dependencies == [expected[0]])
        let late = BlockOperation {}
        fanIn.addDependency(late)
        fanIn.addDependency(late)
        #expect(fanIn.dependencies == [expected[0], late], "a dependency added twice to a pruned wide list is listed once")
        fanIn.removeDependency(late)
        #expect(fanIn.dependencies == [expected[0]], "removing it from a pruned wide list removes it")
        // Pruned to none: the same.
        fanIn.removeDependency(expected[0])
        #expect(fanIn.dependencies.isEmpty)
        fanIn.addDependency(late)
        fanIn.addDependency(late)
        #expect(fanIn.dependencies == [late], "a dependency added twice to an emptied wide list is listed once")
        fanIn.removeDependency(late)
        #expect(fanIn.dependencies.isEmpty, "removing it from an emptied wide list removes it")
    }

    // MARK: - O8 in a graph

    @Test func O8_cancelledPendingOperationBecomesReadyIsRetiredWithoutMainAndItsDependentsRun() {
        let neverRun = BlockOperation {}
        neverRun.name = "never run"
        let mainRuns = Counter()
        let pending = BlockOperation { mainRuns.increment() }
        pending.name = "pending"
        pending.addDependency(neverRun)
        let dependentRan = Latch()
        let dependent = signallingOperation(dependentRan, name: "dependent")
        dependent.addDependency(pending)
        let queue = OperationQueue()
        queue.addOperations([pending, dependent], waitUntilFinished: false)
        quietPeriod()
        #expect(!pending.isReady && !dependentRan.isOpen)

        pending.cancel()
        #expect(pending.isReady, "\(runtimeUnderTest): a cancelled operation that has not started is ready")
        guard waitFor(dependentRan, "the dependent of a cancelled pending operation to run") else { return }
        #expect(pending.isFinished && pending.isCancelled)
        #expect(mainRuns.current == 0, "\(runtimeUnderTest): main() of a cancelled operation ran")
        #expect(!neverRun.isFinished)
        waitUntilAllOperationsAreFinished(queue)
    }
}

/// Gives each operation after the first 0–3 random dependencies on earlier ones (a DAG) and
/// returns the edges as (dependency, dependent) index pairs.
private func addRandomDependencies(_ operations: [Operation], using random: inout SeededGenerator) -> [(Int, Int)] {
    var edges: [(Int, Int)] = []
    for index in 1..<operations.count {
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            let dependency = Int.random(in: 0..<index, using: &random)
            if edges.contains(where: { $0 == (dependency, index) }) { continue }
            operations[index].addDependency(operations[dependency])
            edges.append((dependency, index))
        }
    }
    return edges
}
