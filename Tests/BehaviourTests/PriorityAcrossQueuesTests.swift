// PriorityAcrossQueuesTests.swift — SEMANTICS P3: queue priorities order the operations of one
// queue only. A veryHigh operation of one queue takes no precedence over a veryLow operation of
// another queue held back by its own width. (The case of every worker busy depends on our
// worker pool: Tests/OperationsTests/PriorityAcrossQueuesTests.swift.)
import Testing

@Suite(.sharesProcess) struct PriorityAcrossQueuesTests {
    @Test func P3_aQueuesWaitingVeryHighOperationsDoNotHoldBackAnotherQueuesVeryLowOne() {
        let serial = OperationQueue()
        serial.name = "serial, held"
        serial.maxConcurrentOperationCount = 1
        let gate = Latch()
        let holderStarted = Latch()
        serial.addOperation {
            holderStarted.open()
            _ = gate.wait(seconds: Deadline.seconds)
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
        #expect(veryHighRan.current == 0, "\(runtimeUnderTest): no veryHigh operation of the held serial queue may run before its holder returns")
        gate.open()
        guard lowFinished else { return }
        guard waitUntilAllOperationsAreFinished(serial) else { return }
        #expect(veryHighRan.current == 50)
    }
}
