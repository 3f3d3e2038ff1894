// A file that keeps `import Foundation` beside `import Operations` with the scoped imports that
// "Moving from Foundation" asked for before the facade (0.9.0): they are no longer needed
// (BesideFoundationUnscoped.swift), and must keep compiling where users wrote them. The facade
// declares the four names itself, so `import class Operations.OperationQueue` finds one type.
import Foundation
import Operations
import class Operations.OperationQueue
import class Operations.Operation
import class Operations.BlockOperation
import enum Operations.QualityOfService

final class StepOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var step = 0
    override func main() {
        willChangeValue(for: \.isExecuting)
        lock.withLock { step += 1 }
        didChangeValue(for: \.isExecuting)
    }
}

func makeQueue(qos: QualityOfService = .utility, label: String = "beside") -> OperationQueue {
    let queue = OperationQueue()
    queue.qualityOfService = qos
    queue.underlyingQueue = DispatchQueue(label: label)
    return queue
}

func run(on queue: OperationQueue = makeQueue()) -> Date {
    queue.progress.totalUnitCount = 2
    queue.addOperation(StepOperation())
    queue.addOperation(BlockOperation { print(URL(fileURLWithPath: "/tmp").path) })
    let token = NotificationCenter.default.addObserver(forName: .init("step"), object: nil, queue: queue) { _ in }
    NotificationCenter.default.removeObserver(token)
    let _: Operations.OperationQueue = queue
    let _: Operations.QualityOfService = .background
    return Date()
}
