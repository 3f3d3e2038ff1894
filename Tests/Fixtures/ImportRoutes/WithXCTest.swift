// A test file migrated by the one-line swap: `import XCTest` (which re-exports Foundation) and
// `import Operations`, no scoped imports. The four types, `init()`, `.veryLow` and
// `XCTAssertEqual` on them must resolve to this package's (issue 33, item 10: before the facade
// each was ambiguous here).
import XCTest
import Operations

final class FetchOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var executing = false
    private var finished = false
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }
    override func start() {
        willChangeValue(for: \.isExecuting)
        lock.withLock { executing = true }
        didChangeValue(for: \.isExecuting)
        DispatchQueue.global().async { self.finish() }
    }
    func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        lock.withLock { (executing, finished) = (false, true) }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

final class SwapTests: XCTestCase {
    func testQueueRunsOurOperations() {
        let queue = OperationQueue()
        queue.qualityOfService = .userInitiated
        let fetch = FetchOperation()
        let done = expectation(description: "done")
        let report = BlockOperation { done.fulfill() }
        report.queuePriority = .veryLow
        report.addDependency(fetch)
        queue.addOperations([fetch, report], waitUntilFinished: false)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(report.queuePriority, .veryLow)
        XCTAssertEqual(queue.qualityOfService, .userInitiated)
        XCTAssertTrue(queue.foundationQueue.operationsQueue === queue)
        let _: Operations.OperationQueue = queue
        let _: Foundation.OperationQueue = Foundation.OperationQueue()
    }
}
