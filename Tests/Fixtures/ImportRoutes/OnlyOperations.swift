// The one-step migration: this file said `import Foundation`; now it says `import Operations`,
// which brings Foundation (Date, URL, NSLock, Progress, NotificationCenter) and Dispatch too,
// while OperationQueue, Operation, BlockOperation and QualityOfService are this package's.
import Operations

/// An asynchronous subclass as written for Foundation, announcing with key paths (item 2).
final class DownloadOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var executing = false
    private var finished = false
    let url: URL
    let started = Date()

    init(url: URL) {
        self.url = url
        super.init()
    }

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
        willChangeValue(for: \.isFinished)
        lock.withLock { (executing, finished) = (false, true) }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(for: \.isFinished)
    }
}

/// A subclass of the queue, overriding `progress` (item 3).
final class CountingQueue: OperationQueue, @unchecked Sendable {
    override var progress: Progress { super.progress }
}

/// Default arguments that name this package's types: in a file that imports Operations they
/// need nothing else (the typealias route warned "'Operations' was not imported by this file",
/// an error in Swift 6 mode).
func makeQueue(named name: String = "downloads", qos: QualityOfService = .utility,
               width: Int = OperationQueue.defaultMaxConcurrentOperationCount) -> OperationQueue {
    let queue = CountingQueue()
    queue.name = name
    queue.qualityOfService = qos
    queue.maxConcurrentOperationCount = width
    return queue
}

func schedule(on queue: OperationQueue = makeQueue(), urls: [URL]) -> [Operation] {
    queue.progress.totalUnitCount = Int64(urls.count)
    let operations: [Operation] = urls.map { DownloadOperation(url: $0) }
    let done = BlockOperation { print("all downloaded") }
    for operation in operations { done.addDependency(operation) }
    queue.addOperations(operations + [done], waitUntilFinished: false)
    return operations
}

func observeWarnings(on queue: OperationQueue) -> any NSObjectProtocol {
    // NotificationCenter with this package's queue (item 4), and with nil.
    let center = NotificationCenter.default
    let name = Notification.Name("warning")
    _ = center.addObserver(forName: name, object: nil, queue: nil) { _ in }
    return center.addObserver(forName: name, object: nil, queue: queue) { note in print(note.name) }
}

func checkTypes() {
    // The names are this package's types, not Foundation's.
    let queue: Operations.OperationQueue = OperationQueue()
    let block: Operations.BlockOperation = BlockOperation {}
    let qos: Operations.QualityOfService = .userInitiated
    let foundationQueue: Foundation.OperationQueue = queue.foundationQueue
    let dispatchQueue = DispatchQueue(label: "route")
    _ = (block, qos, foundationQueue.operationsQueue, dispatchQueue)
    queue.addTaskOperation { try await Task.sleep(for: .milliseconds(1)) }  // ours only
    _ = schedule(urls: [URL(fileURLWithPath: "/tmp")])
    _ = observeWarnings(on: queue)
}
