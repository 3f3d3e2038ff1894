// OperationsCompetitor.swift — `operations`: our Swift API (Operations.BlockOperation on
// Operations.OperationQueue), plugged into the shared OperationQueueCompetitor.
import Operations

/// Our Swift layer's operations and queues.
enum OperationsAPI: OperationQueueAPI {
    static let name = "operations"
    static func newQueue() -> Operations.OperationQueue { Operations.OperationQueue() }
    static func makeOperation(_ body: @escaping @Sendable () -> Void) -> Operations.Operation {
        Operations.BlockOperation(block: body)
    }
    static var canPlace: Bool { true }
    static func place(_ queue: Operations.OperationQueue, on cpus: [Int]) {
        do { try queue.setCPUs(Set(cpus)) } catch { fatalError("placing \(queue): \(error)") }
    }
}

extension Operations.OperationQueue: PerfOperationQueue {}
extension Operations.Operation: PerfOperation {
    func setThreadPriority(_ value: Double) { threadPriority = value }
}
