// ImportXCTestAndOperationsTests.swift — a test file migrated by the one-line swap (issue 33,
// item 10): it said `import XCTest` and `import Foundation`, and `import Operations` replaced the
// second. XCTest re-exports Foundation, so Foundation's OperationQueue, Operation, BlockOperation
// and QualityOfService are visible here too; the names must still be this package's, with no
// scoped imports and no qualification. This target depends on the Operations product alone, as a
// client's test target does; it does not compile where `import Operations` does not win beside
// XCTest (on the layout before the facade, ad5e7e5, this file had 40 errors: "'Operation' is
// ambiguous for type lookup in this context", "ambiguous use of 'init()'", …).
import XCTest
import Operations

/// A synchronous subclass as a Foundation user writes one: it overrides main().
final class CountingOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var runs = 0
    var runCount: Int { lock.withLock { runs } }
    override func main() {
        guard !isCancelled else { return }
        lock.withLock { runs += 1 }
    }
}

/// An asynchronous subclass as a Foundation user writes one: isAsynchronous, its own isExecuting
/// and isFinished, start() that returns at once, and the changes announced by key.
final class DelayedFinishOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var executing = false
    private var finished = false
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        if isCancelled { return finish() }
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true }
        didChangeValue(forKey: "isExecuting")
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { self.finish() }
    }

    private func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        lock.withLock { (executing, finished) = (false, true) }
        didChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
    }
}

/// A default argument that names the types, as library code has them.
func makeSwapQueue(named name: String = "swap", qos: QualityOfService = .utility,
                   width: Int = OperationQueue.defaultMaxConcurrentOperationCount) -> OperationQueue {
    let queue = OperationQueue()
    queue.name = name
    queue.qualityOfService = qos
    queue.maxConcurrentOperationCount = width
    return queue
}

/// How long a test waits for work it started.
let swapTimeout: TimeInterval = 10

final class ImportXCTestAndOperationsTests: XCTestCase {
    func testOperationQueueInitializerBesideXCTestMakesThisPackagesQueue() {
        let queue = OperationQueue()
        // Members Foundation's queue does not have: this is ours.
        XCTAssertTrue(queue.foundationQueue.operationsQueue === queue)
        XCTAssertNil(Foundation.OperationQueue().operationsQueue, "Foundation.OperationQueue is Foundation's")
        let qualified: Operations.OperationQueue = queue
        XCTAssertTrue(qualified === queue)
        XCTAssertEqual(ObjectIdentifier(type(of: queue)), ObjectIdentifier(Operations.OperationQueue.self))
        XCTAssertNotEqual(ObjectIdentifier(OperationQueue.self), ObjectIdentifier(Foundation.OperationQueue.self))
    }

    func testBlockOperationsBesideXCTestRunOnThisPackagesQueue() {
        let queue = makeSwapQueue()
        let ran = expectation(description: "every block ran")
        ran.expectedFulfillmentCount = 3
        let operation = BlockOperation { ran.fulfill() }
        operation.addExecutionBlock { ran.fulfill() }
        queue.addOperation(operation)
        queue.addOperation { ran.fulfill() }
        wait(for: [ran], timeout: swapTimeout)
        XCTAssertEqual(operation.executionBlocks.count, 2)
        XCTAssertEqual(queue.name, "swap")
    }

    func testSubclassOverridingMainBesideXCTestRunsOnceOnItsQueue() {
        let queue = makeSwapQueue(width: 1)
        let operation = CountingOperation()
        let finished = expectation(description: "completion block")
        operation.completionBlock = { finished.fulfill() }
        queue.addOperation(operation)
        wait(for: [finished], timeout: swapTimeout)
        XCTAssertEqual(operation.runCount, 1)
        XCTAssertTrue(operation.isFinished)
        XCTAssertFalse(operation.isAsynchronous)
    }

    func testAsynchronousSubclassOverridingStartBesideXCTestHoldsItsDependent() {
        let queue = makeSwapQueue()
        let download = DelayedFinishOperation()
        let parsed = expectation(description: "the dependent ran after the download finished")
        let parse = BlockOperation {
            XCTAssertTrue(download.isFinished)
            parsed.fulfill()
        }
        parse.addDependency(download)
        queue.addOperations([parse, download], waitUntilFinished: false)
        wait(for: [parsed], timeout: swapTimeout)
        XCTAssertTrue(download.isAsynchronous)
        XCTAssertEqual(parse.dependencies.count, 1)
        XCTAssertTrue(parse.dependencies.first === download)
    }

    func testQueuePriorityAndQualityOfServiceBesideXCTestCompareWithXCTAssertEqual() {
        let operation = BlockOperation {}
        operation.queuePriority = .veryLow
        XCTAssertEqual(operation.queuePriority, .veryLow)
        let priority: Operation.QueuePriority = .veryHigh
        XCTAssertEqual(priority, Operations.Operation.QueuePriority.veryHigh)
        operation.qualityOfService = .userInitiated
        XCTAssertEqual(operation.qualityOfService, .userInitiated)
        // Apple's raw values, where Foundation on Linux has 0...4: the enum is ours.
        XCTAssertEqual(QualityOfService.userInitiated.rawValue, 25)
        XCTAssertEqual(QualityOfService.background.rawValue, 9)
        XCTAssertEqual(Foundation.QualityOfService.background.rawValue, 3)
        let queue = makeSwapQueue(qos: .background)
        XCTAssertEqual(queue.qualityOfService, .background)
        XCTAssertNotEqual(queue.qualityOfService, .userInteractive)
    }

    func testSerialQueueBesideXCTestRunsVeryHighBeforeVeryLow() {
        let queue = makeSwapQueue(width: 1)
        queue.isSuspended = true
        let order = NSLock()
        nonisolated(unsafe) var ran: [String] = []
        let done = expectation(description: "both ran")
        done.expectedFulfillmentCount = 2
        let low = BlockOperation { order.withLock { ran.append("veryLow") }; done.fulfill() }
        low.queuePriority = .veryLow
        let high = BlockOperation { order.withLock { ran.append("veryHigh") }; done.fulfill() }
        high.queuePriority = .veryHigh
        queue.addOperations([low, high], waitUntilFinished: false)
        queue.isSuspended = false
        wait(for: [done], timeout: swapTimeout)
        XCTAssertEqual(order.withLock { ran }, ["veryHigh", "veryLow"])
    }

    func testAdditionsOfThisPackageBesideXCTestNeedNoOtherImport() {
        let queue = makeSwapQueue()
        let ran = expectation(description: "async body ran")
        queue.addTaskOperation {
            try? await Task.sleep(for: .milliseconds(1))
            ran.fulfill()
        }
        wait(for: [ran], timeout: swapTimeout)
        XCTAssertFalse(OperationsRuntime.usableCPUs.isEmpty)
        let operation = TaskOperation { }
        XCTAssertFalse(operation.isFinished)
    }
}
