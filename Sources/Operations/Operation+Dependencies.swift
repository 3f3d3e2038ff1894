// Operation+Dependencies.swift — dependencies between operations, on any queue or none. The
// graph itself lives in the core (an O(1) edge per dependency); the list kept here is what
// `dependencies` reports, in the order they were added.
import OperationsCore

extension Operation {
    /// Makes the receiver wait until `operation` finished (or was cancelled and retired).
    /// Add dependencies before adding the receiver to a queue: one added to an operation that
    /// is already ready may not hold it back.
    public func addDependency(_ operation: Operation) {
        if operation === self {
            operationMisuse("addDependency(_:) called on \(self) with itself; an operation cannot wait for itself")
        }
        // A dependency added twice counts once (as Foundation: the second add is ignored).
        let added = StripedLock.shared.withLock(for: self) { () -> Bool in
            if lockedDependencies.contains(where: { $0 === operation }) { return false }
            lockedDependencies.append(operation)
            return true
        }
        guard added else { return }
        willChangeValue(forKey: "dependencies")
        _ = op_task_add_dependency(task, operation.task) // EALREADY: already ready (D3)
        didChangeValue(forKey: "dependencies")
    }

    /// Removes a dependency; if it had not finished, the receiver may become ready at once.
    public func removeDependency(_ operation: Operation) {
        willChangeValue(forKey: "dependencies")
        let removed = StripedLock.shared.withLock(for: self) { () -> Bool in
            guard let index = lockedDependencies.firstIndex(where: { $0 === operation }) else { return false }
            lockedDependencies.remove(at: index)
            return true
        }
        if removed { _ = op_task_remove_dependency(task, operation.task) }
        didChangeValue(forKey: "dependencies")
        if removed { didChangeValue(forKey: "isReady") }
    }

    /// The operations the receiver depends on, in the order they were added.
    public var dependencies: [Operation] {
        StripedLock.shared.withLock(for: self) { lockedDependencies }
    }
}
