// QueueTests.swift — thread priority and quality of service as nice values (SEMANTICS P4, P5).
// The queue tests that use only Foundation's API (Q1, Q2, Q4, Q6, Q7, Q8, Q10, Q11, P2) are
// behaviour tests, run over Operations and over Foundation: Tests/BehaviourTests/QueueTests.swift.
import Glibc
import Operations
import Testing

/// Records the nice value of the thread running main() and running the completion block.
private final class NiceProbe: Operation, @unchecked Sendable {
    let inMain = Locked<Int32?>(nil)
    let inCompletion = Locked<Int32?>(nil)
    let completed = Latch()
    override init() {
        super.init()
        completionBlock = { [unowned self] in
            inCompletion.withLock { $0 = threadNice() }
            completed.open()
        }
    }
    override func main() { inMain.withLock { $0 = threadNice() } }
    var mainNice: Int32? { inMain.withLock { $0 } }
    var completionNice: Int32? { inCompletion.withLock { $0 } }
}

@Suite(.sharesProcess) struct QueueTests {
    // Regression: every execution block of a BlockOperation runs at the operation's QoS nice
    // (P5), also the ones concurrentPerform hands to libdispatch threads.
    @Test(arguments: [QualityOfService.userInteractive, .background, .utility, .userInitiated])
    func P5_everyExecutionBlockOfABlockOperationRunsAtItsQualityOfService(qos: QualityOfService) {
      let queue = OperationQueue()
      queue.qualityOfService = qos
      let nices = Recorder<Int32>()
      let operation = BlockOperation { nices.append(threadNice()); quietPeriod(0.01) }
      for _ in 0..<5 { operation.addExecutionBlock { nices.append(threadNice()); quietPeriod(0.01) } }
      queue.addOperation(operation)
      guard waitUntilFinished(operation) else { return }
      #expect(nices.snapshot == Array(repeating: expectedNice(qos), count: 6),
              "nice values of the 6 blocks of a BlockOperation on a \(qos) queue (expected \(expectedNice(qos)) each)")
    
    }

    // Issue 23: an operation whose QoS differs from its queue's runs on its own class's workers,
    // at its class's nice value, not on a reniced worker of the queue's class; so four classes
    // run on four different threads, also as a user without CAP_SYS_NICE (UnprivilegedNiceTests).
    @Test func operationsOfOtherClassesRunOnTheirOwnClassWorkers() {
        let queue = OperationQueue()
        queue.qualityOfService = .default
        let classes: [QualityOfService] = [.userInteractive, .userInitiated, .utility, .background]
        let seen = Recorder<(QualityOfService, Int32, Int32)>()
        let operations = classes.map { qos in
            let operation = BlockOperation { seen.append((qos, threadNice(), currentThreadID())) }
            operation.qualityOfService = qos
            return operation
        }
        queue.addOperations(operations, waitUntilFinished: false)
        for operation in operations { guard waitUntilFinished(operation) else { return } }
        let records = seen.snapshot
        #expect(records.count == classes.count)
        for (qos, nice, _) in records {
            #expect(nice == expectedNice(qos), "a \(qos) operation on a default queue ran at nice \(nice)")
        }
        #expect(Set(records.map(\.2)).count == classes.count,
                "operations of \(classes.count) classes ran on threads \(records.map(\.2))")
    }

    // MARK: - P4

    @Test(arguments: [(QualityOfService.default, 1.0), (.default, 0.0), (.userInitiated, 1.0), (.utility, 0.0), (.background, 0.25)])
    func P4_threadPriorityAppliesToMainOnlyAndTheCompletionBlockRunsAtTheClassValue(queueQoS: QualityOfService, threadPriority: Double) {
        let queue = OperationQueue()
        queue.qualityOfService = queueQoS
        let probe = NiceProbe()
        probe.threadPriority = threadPriority
        #expect(probe.threadPriority == threadPriority)
        queue.addOperation(probe)
        guard waitFor(probe.completed, "the completion block") else { return }
        #expect(probe.mainNice == expectedNice(queueQoS, threadPriority: threadPriority),
                "nice in main() at threadPriority \(threadPriority) on a \(queueQoS) queue (table \(OperationsRuntime.niceTable))")
        #expect(probe.completionNice == expectedNice(queueQoS),
                "nice in the completion block (threadPriority \(threadPriority), \(queueQoS) queue)")
    }

    @Test func P4_threadPriorityOfAnOperationStartedByHandIsRestoredWhenMainReturns() {
        let probe = NiceProbe()
        probe.threadPriority = 1.0
        let before = Locked<Int32?>(nil)
        let after = Locked<Int32?>(nil)
        runOnNewThread("an operation started by hand") {
            before.withLock { $0 = threadNice() }
            probe.start()
            after.withLock { $0 = threadNice() }
        }
        #expect(probe.mainNice == expectedNice(.default, threadPriority: 1.0))
        #expect(after.withLock { $0 } == before.withLock { $0 }, "start() left the calling thread at another nice value")
        // The completion block runs after the finish, on the default class's completion queue.
        guard waitFor(probe.completed, "the completion block") else { return }
        #expect(probe.completionNice == expectedNice(.default), "the completion block ran at main()'s thread priority")
    }

    @Test func P4_threadPriorityIsClampedToTheUnitInterval() {
        let operation = BlockOperation()
        operation.threadPriority = 7
        #expect(operation.threadPriority == 1.0)
        operation.threadPriority = -3
        #expect(operation.threadPriority == 0.0)
    }

    // MARK: - P5

    @Test func P5_operationQualityOfServiceOverridesItsQueuesAndOperationsWithoutOneTakeTheQueues() {
        #expect(OperationsRuntime.negativeNiceAllowed || getuid() != 0, "root may use negative nice values")
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        let interactive = NiceProbe()
        interactive.qualityOfService = .userInteractive
        #expect(interactive.qualityOfService == .userInteractive)
        let inherited = NiceProbe()
        let backgroundHighPriority = NiceProbe()
        backgroundHighPriority.qualityOfService = .background
        backgroundHighPriority.threadPriority = 1.0
        queue.addOperations([interactive, inherited, backgroundHighPriority], waitUntilFinished: false)
        for probe in [interactive, inherited, backgroundHighPriority] {
            guard waitFor(probe.completed, "a probe's completion block") else { return }
        }
        let table = OperationsRuntime.niceTable
        #expect(interactive.mainNice == expectedNice(.userInteractive),
                "userInteractive operation on a utility queue (table \(table))")
        #expect(inherited.mainNice == expectedNice(.utility), "operation without its own QoS on a utility queue (table \(table))")
        #expect(backgroundHighPriority.mainNice == expectedNice(.background, threadPriority: 1.0),
                "background operation at thread priority 1.0 (table \(table))")
        #expect(backgroundHighPriority.completionNice == expectedNice(.background))
        if getuid() == 0 {
            #expect(expectedNice(.userInteractive) < 0, "as root the userInteractive class runs at a negative nice value")
        }
    }
}
