// MainQueueTests.swift — OperationQueue.main and underlyingQueue (SEMANTICS Q8, Q10): the main
// queue is serial, runs its operations on the main thread through Dispatch's main queue, and is
// `current` there; a queue with an underlying dispatch queue runs its operations on it.
import Dispatch
import Glibc
import Operations
import OperationsCore
import Testing

@Suite(.sharesProcess)
struct MainQueueTests {
    @Test func Q8_Q10_theMainQueueIsSerialUserInteractiveAndRunsOnTheMainThread() {
        let main = OperationQueue.main
        #expect(main === OperationQueue.main)
        #expect(main.maxConcurrentOperationCount == 1)
        #expect(main.qualityOfService == .userInteractive)
        #expect(main.underlyingQueue?.label == DispatchQueue.main.label)
        // Dispatch's main queue, recognised by a queue-specific value: under Swift Testing on
        // Linux the main queue is not bound to one thread (dispatch_main unbinds it and pool
        // threads take turns draining it: comparing thread ids failed 1 run in many with
        // [false, true, false, true, …]), but a block it runs sees its specific values.
        let onMainQueueKey = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: onMainQueueKey, value: true)
        defer { DispatchQueue.main.setSpecific(key: onMainQueueKey, value: nil) }
        let onMainQueue = Recorder<Bool>()
        let currentIsMain = Recorder<Bool>()
        let gauge = ConcurrencyGauge()
        let operations = (0..<10).map { _ in
            BlockOperation {
                gauge.enter()
                onMainQueue.append(DispatchQueue.getSpecific(key: onMainQueueKey) == true)
                currentIsMain.append(OperationQueue.current === OperationQueue.main)
                gauge.leave()
            }
        }
        main.addOperations(operations, waitUntilFinished: false)
        guard waitUntilFinished(operations[9]) else { return }
        for operation in operations { guard waitUntilFinished(operation) else { return } }
        #expect(onMainQueue.snapshot == Array(repeating: true, count: 10), "main-queue operations run where Dispatch's main queue runs")
        #expect(currentIsMain.snapshot == Array(repeating: true, count: 10), "OperationQueue.current is .main inside them")
        #expect(gauge.maximum == 1, "the main queue is serial")
    }

    @Test func Q8_dependenciesCrossFromAWorkerQueueToTheMainQueue() {
        let log = Recorder<String>()
        let background = OperationQueue()
        let first = loggingOperation("worker", log)
        let second = loggingOperation("main", log)
        second.addDependency(first)
        OperationQueue.main.addOperation(second)
        background.addOperation(first)
        guard waitUntilFinished(second) else { return }
        #expect(log.snapshot == ["worker", "main"])
    }

    @Test func anUnderlyingQueueRunsTheOperationsAndTheWidthStillApplies() {
        let key = DispatchSpecificKey<Int>()
        let target = DispatchQueue(label: "underlying", attributes: .concurrent)
        target.setSpecific(key: key, value: 7)
        let queue = OperationQueue()
        queue.underlyingQueue = target
        queue.maxConcurrentOperationCount = 1
        #expect(queue.underlyingQueue === target)
        let onTarget = Recorder<Bool>()
        let currentIsQueue = Recorder<Bool>()
        let gauge = ConcurrencyGauge()
        for _ in 0..<20 {
            queue.addOperation {
                gauge.enter()
                onTarget.append(DispatchQueue.getSpecific(key: key) == 7)
                currentIsQueue.append(OperationQueue.current === queue)
                quietPeriod(0.001)
                gauge.leave()
            }
        }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(onTarget.snapshot == Array(repeating: true, count: 20), "operations run on the underlying queue")
        #expect(currentIsQueue.snapshot == Array(repeating: true, count: 20), "OperationQueue.current is the queue there")
        #expect(gauge.maximum == 1, "the width still applies on a concurrent underlying queue")
    }
}
