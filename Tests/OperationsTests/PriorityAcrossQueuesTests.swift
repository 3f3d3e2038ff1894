// PriorityAcrossQueuesTests.swift — SEMANTICS P3: queue priorities order the operations of one
// queue only. A veryHigh operation of one queue takes no precedence over a veryLow operation of
// another when every worker is busy (our worker pool's FIFO of queues). The case of a queue held
// back by its own width is a behaviour test: Tests/BehaviourTests/PriorityAcrossQueuesTests.swift.
//
// The suite has the process to itself (.needsQuietProcess): its test occupies every worker of
// the utility class, which other suites' operations would otherwise hold.
import Operations
import Testing

@Suite(.needsQuietProcess, .serialized) struct PriorityAcrossQueuesTests {
    /// With every worker of the class busy, queues get the first free worker in the order they
    /// got work (the pool's FIFO of queues); a later queue's veryHigh operations do not overtake
    /// an earlier queue's veryLow ones. With one priority order across queues they would, as
    /// they do when the same four operations wait in one queue (the contrast case, P2).
    @Test(arguments: [false, true])
    func P3_whenAWorkerFreesUpAnEarlierQueuesVeryLowOperationsRunBeforeALaterQueuesVeryHighOnes(oneQueue: Bool) {
        let workers = OperationsRuntime.topology.cpuCount
        let holders = OperationQueue()
        holders.name = "holders"
        holders.qualityOfService = .utility
        // Every worker, also where a container CPU limit makes the default width smaller.
        holders.maxConcurrentOperationCount = workers
        let gates = (0..<workers).map { _ in Latch() }
        let holding = Latch()
        for gate in gates {
            holders.addOperation {
                holding.arrive()
                _ = gate.wait(seconds: Limits.waitSeconds)
            }
        }
        let openAllGates = { for gate in gates { gate.open() } }
        guard waitFor(holding, "every utility worker to hold one operation", count: workers) else { openAllGates(); return }

        let log = Recorder<String>()
        let earlier = OperationQueue()
        earlier.name = "earlier"
        earlier.qualityOfService = .utility
        let later = oneQueue ? earlier : OperationQueue()
        later.name = oneQueue ? "earlier and later" : "later"
        later.qualityOfService = .utility
        var added: [Operation] = []
        for (queue, name, priority) in [(earlier, "earlier veryLow", Operation.QueuePriority.veryLow),
                                        (later, "later veryHigh", .veryHigh)] {
            for index in 1...2 {
                let operation = loggingOperation("\(name) \(index)", log)
                operation.queuePriority = priority
                queue.addOperation(operation)
                added.append(operation)
            }
        }
        gates[0].open()
        var allFinished = true
        for operation in added where allFinished {
            allFinished = waitUntilFinished(operation)
        }
        openAllGates()
        guard allFinished else { return }
        let expected = oneQueue
            ? ["later veryHigh 1", "later veryHigh 2", "earlier veryLow 1", "earlier veryLow 2"]
            : ["earlier veryLow 1", "earlier veryLow 2", "later veryHigh 1", "later veryHigh 2"]
        #expect(log.snapshot == expected, "one worker free of \(workers) utility workers, \(oneQueue ? "one queue" : "two queues")")
        _ = waitUntilAllOperationsAreFinished(holders)
    }
}
