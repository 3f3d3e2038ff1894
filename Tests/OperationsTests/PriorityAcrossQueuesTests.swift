// PriorityAcrossQueuesTests.swift — SEMANTICS P3: queue priorities order the operations of one
// queue only. A veryHigh operation of one queue takes no precedence over a veryLow operation of
// another, whether the first queue is held back by its own width or every worker is busy.
//
// The suite has the process to itself (.needsQuietProcess): its second test occupies every
// worker of the utility class, which other suites' operations would otherwise hold.
import Operations
import Testing

@Suite(.needsQuietProcess, .serialized) struct PriorityAcrossQueuesTests {
    @Test func P3_aQueuesWaitingVeryHighOperationsDoNotHoldBackAnotherQueuesVeryLowOne() {
        let serial = OperationQueue()
        serial.name = "serial, held"
        serial.maxConcurrentOperationCount = 1
        let gate = Latch()
        let holderStarted = Latch()
        serial.addOperation {
            holderStarted.open()
            _ = gate.wait(seconds: Limits.waitSeconds)
        }
        guard waitFor(holderStarted, "the serial queue's holder to start") else { gate.open(); return }
        let veryHighRan = Counter()
        for _ in 0..<50 {
            let operation = BlockOperation { veryHighRan.increment() }
            operation.queuePriority = .veryHigh
            serial.addOperation(operation)
        }
        let other = OperationQueue()
        other.name = "other"
        let lowRan = Latch()
        let low = signallingOperation(lowRan, name: "veryLow on another queue")
        low.queuePriority = .veryLow
        other.addOperation(low)
        let lowFinished = waitFor(lowRan, "the other queue's veryLow operation while 50 veryHigh ones wait in a held serial queue")
        #expect(veryHighRan.current == 0, "no veryHigh operation of the held serial queue may run before its holder returns")
        gate.open()
        guard lowFinished else { return }
        guard waitUntilAllOperationsAreFinished(serial) else { return }
        #expect(veryHighRan.current == 50)
    }

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
