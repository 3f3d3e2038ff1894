// BarrierOrderTests.swift — a barrier never reorders what follows it (SEMANTICS Q9): on a
// serial queue, the operations added after a barrier start in the order they were added
// (within a priority level), and by priority across levels.
import Testing

@Suite(.sharesProcess) struct BarrierOrderTests {
    /// Runs a serial queue whose first operation holds it while `add` adds a barrier and what
    /// follows it, then lets it run to the end; returns what the bodies logged, in order.
    private func logOfASerialQueueHeldWhile(_ add: (OperationQueue, Recorder<String>) -> Void) -> [String] {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = Latch()
        let log = Recorder<String>()
        queue.addOperation { _ = gate.wait(seconds: Deadline.seconds) }
        add(queue, log)
        gate.open()
        waitUntilAllOperationsAreFinished(queue)
        return log.snapshot
    }

    @Test(arguments: [2, 3, 10, 50])
    func Q9_operationsAfterABarrierStartInTheOrderTheyWereAdded(_ count: Int) {
        let log = logOfASerialQueueHeldWhile { queue, log in
            queue.addBarrierBlock { log.append("barrier") }
            for index in 0..<count { queue.addOperation { log.append("\(index)") } }
        }
        #expect(log == ["barrier"] + (0..<count).map { "\($0)" }, "\(runtimeUnderTest)")
    }

    @Test func Q9_P2_afterABarrierPriorityThenOrderOfAdding() {
        let log = logOfASerialQueueHeldWhile { queue, log in
            queue.addBarrierBlock { log.append("barrier") }
            let plan: [(String, Operation.QueuePriority)] = [
                ("n1", .normal), ("h1", .high), ("n2", .normal), ("h2", .high), ("n3", .normal),
            ]
            for (label, priority) in plan {
                let operation = BlockOperation { log.append(label) }
                operation.queuePriority = priority
                queue.addOperation(operation)
            }
        }
        #expect(log == ["barrier", "h1", "h2", "n1", "n2", "n3"], "\(runtimeUnderTest)")
    }

    @Test func Q9_twoBarriersInARowKeepTheOrderBetweenAndAfterThem() {
        let log = logOfASerialQueueHeldWhile { queue, log in
            queue.addBarrierBlock { log.append("barrier 1") }
            for index in 0..<5 { queue.addOperation { log.append("a\(index)") } }
            queue.addBarrierBlock { log.append("barrier 2") }
            for index in 0..<5 { queue.addOperation { log.append("b\(index)") } }
        }
        let expected = ["barrier 1"] + (0..<5).map { "a\($0)" } + ["barrier 2"] + (0..<5).map { "b\($0)" }
        #expect(log == expected, "\(runtimeUnderTest)")
    }
}
