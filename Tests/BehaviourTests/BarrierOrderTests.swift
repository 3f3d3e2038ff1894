// BarrierOrderTests.swift — a barrier never reorders what follows it (SEMANTICS Q9): on a
// serial queue, the operations added after a barrier start in the order they were added
// (within a priority level), and by priority across levels.
import Testing

@Suite(.sharesProcess) struct BarrierOrderTests {
    @Test(arguments: [2, 3, 10, 50])
    func Q9_operationsAfterABarrierStartInTheOrderTheyWereAdded(_ count: Int) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = Latch()
        let journal = Journal()
        queue.addOperation { _ = gate.wait(seconds: Deadline.seconds) }
        queue.addBarrierBlock { journal.note("barrier") }
        for index in 0..<count {
            queue.addOperation { journal.note("\(index)") }
        }
        gate.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(journal.all == ["barrier"] + (0..<count).map { "\($0)" }, "\(runtimeUnderTest)")
    }

    @Test func Q9_P2_afterABarrierPriorityThenOrderOfAdding() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = Latch()
        let journal = Journal()
        queue.addOperation { _ = gate.wait(seconds: Deadline.seconds) }
        queue.addBarrierBlock { journal.note("barrier") }
        let plan: [(String, Operation.QueuePriority)] = [
            ("n1", .normal), ("h1", .high), ("n2", .normal), ("h2", .high), ("n3", .normal),
        ]
        for (label, priority) in plan {
            let operation = BlockOperation { journal.note(label) }
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        gate.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(journal.all == ["barrier", "h1", "h2", "n1", "n2", "n3"], "\(runtimeUnderTest)")
    }

    @Test func Q9_twoBarriersInARowKeepTheOrderBetweenAndAfterThem() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = Latch()
        let journal = Journal()
        queue.addOperation { _ = gate.wait(seconds: Deadline.seconds) }
        queue.addBarrierBlock { journal.note("barrier 1") }
        for index in 0..<5 { queue.addOperation { journal.note("a\(index)") } }
        queue.addBarrierBlock { journal.note("barrier 2") }
        for index in 0..<5 { queue.addOperation { journal.note("b\(index)") } }
        gate.open()
        queue.waitUntilAllOperationsAreFinished()
        let expected = ["barrier 1"] + (0..<5).map { "a\($0)" } + ["barrier 2"] + (0..<5).map { "b\($0)" }
        #expect(journal.all == expected, "\(runtimeUnderTest)")
    }
}
