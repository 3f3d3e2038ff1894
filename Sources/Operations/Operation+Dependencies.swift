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
        let added = withExtras { extras -> Bool in
            if extras.dependencies.contains(where: { $0 === operation }) { return false }
            extras.dependencies.append(operation)
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
        let removed = readExtras(false) { extras -> Bool in
            guard let index = extras.dependencies.firstIndex(where: { $0 === operation }) else { return false }
            extras.dependencies.remove(at: index)
            return true
        }
        if removed { _ = op_task_remove_dependency(task, operation.task) }
        didChangeValue(forKey: "dependencies")
        if removed { didChangeValue(forKey: "isReady") }
    }

    /// The operations the receiver depends on, in the order they were added.
    public var dependencies: [Operation] {
        readExtras([]) { $0.dependencies }
    }
}

extension Operation {
    /// A dependency cycle reachable from the receiver through unfinished, uncancelled
    /// operations, as the operations in it (first repeated at the end), or nil. Used by waits
    /// that have been blocked for a while; never on the add or run path.
    func reachableDependencyCycle() -> [Operation]? {
        var state: [ObjectIdentifier: Bool] = [:] // false: on the current path, true: done
        var path: [Operation] = []
        func visit(_ operation: Operation) -> [Operation]? {
            if operation.isFinished || operation.isCancelled { return nil }
            let id = ObjectIdentifier(operation)
            if let done = state[id] {
                if done { return nil }
                let start = path.firstIndex { $0 === operation }!
                return Array(path[start...]) + [operation]
            }
            state[id] = false
            path.append(operation)
            for dependency in operation.dependencies {
                if let cycle = visit(dependency) { return cycle }
            }
            path.removeLast()
            state[id] = true
            return nil
        }
        return visit(self)
    }

    /// "A → B → A" for a message.
    static func describeCycle(_ cycle: [Operation]) -> String {
        cycle.map(\.description).joined(separator: " → ")
    }
}
