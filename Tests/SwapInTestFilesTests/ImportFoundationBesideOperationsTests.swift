// ImportFoundationBesideOperationsTests.swift — a file that keeps `import Foundation` beside
// `import Operations` (issue 33, item 10), with XCTest after them and no scoped imports: the
// queue types must be this package's, Foundation's other names Foundation's, and
// `Foundation.`-qualified names Foundation's own. On the layout before the facade (ad5e7e5) every
// unqualified use of the four types here was ambiguous (19 errors).
import Foundation
import Operations
import XCTest

/// An operation subclass that reads its queue while it runs.
final class QueueRecordingOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: OperationQueue?
    var queueSeen: OperationQueue? { lock.withLock { seen } }
    override func main() {
        let current = OperationQueue.current
        lock.withLock { seen = current }
    }
}

final class ImportFoundationBesideOperationsTests: XCTestCase {
    func testOperationQueueBesideImportFoundationIsThisPackagesQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let operation = QueueRecordingOperation()
        let finished = expectation(description: "finished")
        operation.completionBlock = { finished.fulfill() }
        queue.addOperation(operation)
        wait(for: [finished], timeout: swapTimeout)
        XCTAssertTrue(operation.queueSeen === queue)
        XCTAssertEqual(operation.queueSeen, queue)
    }

    func testFoundationQualifiedNamesBesideImportOperationsStayFoundations() {
        let foundationQueue = Foundation.OperationQueue()
        let ran = expectation(description: "Foundation's queue ran Foundation's block operation")
        foundationQueue.addOperation(Foundation.BlockOperation { ran.fulfill() })
        wait(for: [ran], timeout: swapTimeout)
        XCTAssertNil(foundationQueue.operationsQueue)
        let qos: Foundation.QualityOfService = .utility
        XCTAssertEqual(qos.rawValue, 2)
        // Foundation's own types beside ours: Date, URL, NotificationCenter, Progress.
        let queue = OperationQueue()
        let delivered = expectation(description: "a notification delivered on our queue")
        let name = Notification.Name("ImportFoundationBesideOperationsTests")
        let token = NotificationCenter.default.addObserver(forName: name, object: nil, queue: queue) { _ in
            XCTAssertTrue(OperationQueue.current === queue)
            delivered.fulfill()
        }
        NotificationCenter.default.post(name: name, object: nil)
        wait(for: [delivered], timeout: swapTimeout)
        NotificationCenter.default.removeObserver(token)
        XCTAssertEqual(URL(fileURLWithPath: "/tmp").path, "/tmp")
        XCTAssertLessThanOrEqual(Date(timeIntervalSince1970: 0), Date())
    }

    func testDependenciesAcrossQueuesBesideImportFoundationRunInOrder() {
        let first = OperationQueue()
        let second = OperationQueue()
        second.qualityOfService = .userInitiated
        let lock = NSLock()
        nonisolated(unsafe) var order: [Int] = []
        let done = expectation(description: "all three ran")
        done.expectedFulfillmentCount = 3
        let a = BlockOperation { lock.withLock { order.append(1) }; done.fulfill() }
        let b = BlockOperation { lock.withLock { order.append(2) }; done.fulfill() }
        let c = BlockOperation { lock.withLock { order.append(3) }; done.fulfill() }
        b.addDependency(a)
        c.addDependency(b)
        second.addOperation(c)
        first.addOperation(b)
        second.addOperation(a)
        wait(for: [done], timeout: swapTimeout)
        XCTAssertEqual(lock.withLock { order }, [1, 2, 3])
    }

    func testCancelledOperationBesideImportFoundationFinishesWithoutRunning() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let operation = CountingOperation()
        let finished = expectation(description: "the cancelled operation finished")
        operation.completionBlock = { finished.fulfill() }
        queue.addOperation(operation)
        operation.cancel()
        queue.isSuspended = false
        wait(for: [finished], timeout: swapTimeout)
        XCTAssertTrue(operation.isCancelled)
        XCTAssertTrue(operation.isFinished)
        XCTAssertEqual(operation.runCount, 0)
    }
}
