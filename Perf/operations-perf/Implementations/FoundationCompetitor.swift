// FoundationCompetitor.swift — `foundation`: Foundation's OperationQueue and BlockOperation
// (swift-corelibs-foundation), plugged into the shared OperationQueueCompetitor.
import Foundation

/// Foundation's operations and queues.
enum FoundationAPI: OperationQueueAPI {
    static let name = "foundation"
    static func newQueue() -> Foundation.OperationQueue { Foundation.OperationQueue() }
    static func makeOperation(_ body: @escaping @Sendable () -> Void) -> Foundation.Operation {
        Foundation.BlockOperation(block: body)
    }
}

extension Foundation.OperationQueue: PerfOperationQueue {}
extension Foundation.Operation: PerfOperation {
    /// Foundation on Linux has no `threadPriority`: W9's thread-priority probe runs without one.
    func setThreadPriority(_ value: Double) {}
}
