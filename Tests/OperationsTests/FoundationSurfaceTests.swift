// FoundationSurfaceTests.swift — code written the way Foundation code uses Operation,
// BlockOperation, OperationQueue and QualityOfService, with only the import changed. It must
// compile (that is most of the test) and run. Subclass patterns from real libraries are here
// too: overridden name/queuePriority/qualityOfService, an OperationQueue subclass overriding
// addOperation(s) and `main` covariantly.
import Operations
import Testing

/// Overrides the properties libraries override, with get/set, calling super.
private final class ConfiguredOperation: Operation, @unchecked Sendable {
    private let box = Locked<String?>(nil)
    override var name: String? {
        get { box.withLock { $0 } ?? super.name }
        set { box.withLock { $0 = newValue } }
    }
    override var queuePriority: Operation.QueuePriority {
        get { super.queuePriority }
        set { super.queuePriority = newValue }
    }
    override var qualityOfService: QualityOfService {
        get { super.qualityOfService }
        set { super.qualityOfService = newValue }
    }
    override var isAsynchronous: Bool { false }
    override func main() {}
}

/// An OperationQueue subclass that counts what is added, and a covariant `main`.
private final class CountingQueue: OperationQueue, @unchecked Sendable {
    let added = Counter()
    override func addOperation(_ op: Operation) {
        added.increment()
        super.addOperation(op)
    }
    override func addOperations(_ ops: [Operation], waitUntilFinished wait: Bool) {
        for _ in ops { added.increment() }
        super.addOperations(ops, waitUntilFinished: wait)
    }
    override class var main: OperationQueue { super.main }
}

@Suite(.sharesProcess)
struct FoundationSurfaceTests {
    @Test func everyMemberIsUsableAsFoundationCodeUsesIt() {
        // Operation
        let operation: Operation = ConfiguredOperation()
        operation.name = "configured"
        operation.queuePriority = .high
        operation.qualityOfService = .utility
        operation.threadPriority = 0.5
        operation.completionBlock = {}
        let _: Bool = operation.isCancelled
        let _: Bool = operation.isExecuting
        let _: Bool = operation.isFinished
        let _: Bool = operation.isConcurrent
        let _: Bool = operation.isAsynchronous
        let _: Bool = operation.isReady
        let _: [Operation] = operation.dependencies
        let _: Double = operation.threadPriority
        let _: (@Sendable () -> Void)? = operation.completionBlock
        let priorities: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        #expect(priorities.map(\.rawValue) == [-8, -4, 0, 4, 8])
        let classes: [QualityOfService] = [.userInteractive, .userInitiated, .utility, .background, .default]
        #expect(classes.map(\.rawValue) == [0x21, 0x19, 0x11, 0x09, -1])
        operation.willChangeValue(forKey: "isFinished")
        operation.didChangeValue(forKey: "isFinished")

        // BlockOperation
        let block = BlockOperation()
        block.addExecutionBlock {}
        let withBlock = BlockOperation(block: {})
        let _: [@Sendable () -> Void] = withBlock.executionBlocks
        block.addDependency(withBlock)
        block.removeDependency(withBlock)
        block.addDependency(withBlock)

        // OperationQueue, through a subclass like libraries use
        let queue = CountingQueue()
        queue.name = "surface"
        queue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount
        queue.qualityOfService = .userInitiated
        queue.isSuspended = false
        queue.addOperation(operation)
        queue.addOperations([withBlock, block], waitUntilFinished: true)
        queue.addOperation {}
        queue.addBarrierBlock {}
        let _: [Operation] = queue.operations
        let _: Int = queue.operationCount
        let _: Int = queue.maxConcurrentOperationCount
        let _: Bool = queue.isSuspended
        let _: QualityOfService = queue.qualityOfService
        let _: OperationQueue? = OperationQueue.current
        let _: OperationQueue = CountingQueue.main
        #expect(CountingQueue.main === OperationQueue.main)
        queue.waitUntilAllOperationsAreFinished()
        queue.cancelAllOperations()
        // 1 + 2 + the closure form, which goes through the overridden addOperation(_:) as in Foundation.
        #expect(queue.added.current == 4, "the subclass's overrides are called")
        operation.waitUntilFinished()
        #expect(operation.isFinished && block.isFinished && withBlock.isFinished)
        #expect(operation.name == "configured")

        // Hashable / Equatable / CustomStringConvertible
        let set: Set<Operation> = [operation, block, operation]
        #expect(set.count == 2)
        let queues: Set<OperationQueue> = [queue, OperationQueue.main]
        #expect(queues.count == 2)
        #expect(operation.description.contains("configured"))
        #expect(queue.description.contains("surface"))
    }

    /// A raw value persisted by a Foundation build on Linux (0 to 4) or by Apple's (33, 25, 17,
    /// 9, -1) reads back as the same class; `rawValue` gives Apple's. (Foundation on Linux reads
    /// only its own values: our deliberate difference.)
    @Test func addition_qualityOfServiceReadsFoundationOnLinuxAndApplesRawValues() {
        let classes: [QualityOfService] = [.userInteractive, .userInitiated, .utility, .background, .default]
        for (linuxValue, expected) in classes.enumerated() {
            #expect(QualityOfService(rawValue: linuxValue) == expected, "Foundation on Linux's raw value \(linuxValue)")
        }
        for (appleValue, expected) in zip([33, 25, 17, 9, -1], classes) {
            #expect(QualityOfService(rawValue: appleValue) == expected, "Apple's raw value \(appleValue)")
            #expect(expected.rawValue == appleValue)
            #expect(QualityOfService(rawValue: expected.rawValue) == expected)
        }
        for other in [5, 8, 10, 21, 34, -2, Int.max] {
            #expect(QualityOfService(rawValue: other) == nil, "raw value \(other)")
        }
    }
}
