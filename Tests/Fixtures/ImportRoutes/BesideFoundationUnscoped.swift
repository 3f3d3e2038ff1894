// A file that keeps `import Foundation` beside `import Operations`, and nothing else: the
// facade's scoped re-exports make OperationQueue, Operation, BlockOperation and QualityOfService
// this package's here too, `Foundation.`-qualified names stay Foundation's, and both orders of
// the imports mean the same.
import Operations
import Foundation

final class TickOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var ticks = 0
    override var isAsynchronous: Bool { false }
    override func main() { lock.withLock { ticks += 1 } }
}

func makeQueue(qos: QualityOfService = .utility,
               width: Int = OperationQueue.defaultMaxConcurrentOperationCount) -> OperationQueue {
    let queue = OperationQueue()
    queue.qualityOfService = qos
    queue.maxConcurrentOperationCount = width
    return queue
}

func run(on queue: OperationQueue = makeQueue()) -> [Operation] {
    let tick = TickOperation()
    tick.queuePriority = .veryLow
    let block = BlockOperation { print(URL(fileURLWithPath: "/tmp").path, Date()) }
    block.addDependency(tick)
    queue.addOperations([tick, block], waitUntilFinished: false)
    let token = NotificationCenter.default.addObserver(forName: .init("tick"), object: nil, queue: queue) { _ in }
    NotificationCenter.default.removeObserver(token)
    let _: Operations.OperationQueue = queue
    let _: Operations.Operation.QueuePriority = tick.queuePriority
    let foundationQueue: Foundation.OperationQueue = queue.foundationQueue
    let _: Foundation.QualityOfService = .utility
    _ = (foundationQueue.operationsQueue, queue.addTaskOperation { })
    return [tick, block]
}
