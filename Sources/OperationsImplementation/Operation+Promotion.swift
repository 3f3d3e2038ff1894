// Operation+Promotion.swift — QoS promotion (no priority inversion): work that higher-QoS work
// waits for runs at the waiter's QoS until it finished. The core raises what a blocking wait
// waits for (op_task_wait, op_queue_wait: the waiting thread's class) and a serial queue's work
// ahead of a higher-QoS operation; this layer adds what the core cannot see: the async waits
// (the waiting task's priority) and dependencies (the core's edges do not keep dependencies
// alive; the operations' `dependencies` lists do). See the article "Priorities, QoS and nice
// values".
import OperationsCore

extension Operation {
    /// The QoS class this operation was raised to because higher-QoS work waited for it (a
    /// wait, a dependent, or a higher-QoS operation behind it on a serial queue), or `nil` when
    /// it was not raised. Stays readable after the operation finished.
    ///
    /// A raised operation that had not started runs on the workers of that class, at its nice
    /// value; one that was already running has its thread reniced to that class's nice value
    /// until its work returns, where the process may lower nice values (`CAP_SYS_NICE`), and
    /// keeps its nice value otherwise. Not part of Foundation's API.
    public var promotedQualityOfService: QualityOfService? {
        // The core reference orders this read before the task's memory is recycled in a way
        // ThreadSanitizer sees (it does not see Swift's reference counts as synchronising).
        op_task_retain(task)
        defer { op_task_release(task) }
        let qos = op_task_promoted_qos(task)
        return qos < 0 ? nil : QualityOfService(coreClass: op_qos_t(UInt32(qos)))
    }

    /// The most dependencies one promotion walks (transitively), so that a huge graph cannot
    /// make an add or a wait slow.
    static let promotionWalkLimit = 4096

    /// Raises the receiver's unfinished dependencies, and theirs, to `qos` (a core class).
    /// `queue`: the queue the receiver is added to (it is alive), whose own class is at least
    /// `qos`; a direct dependency on it with no QoS of its own runs at that class already.
    func promoteDependencies(to qos: op_qos_t, addedTo queue: OpaquePointer? = nil) {
        // The direct dependencies first, looked at in place under the operation's lock (lock-free
        // reads of their core tasks, never their locks): a dependency on the same queue with no
        // QoS of its own runs at the queue's class already and is skipped, as in W4's chain and
        // W5's and W6's graphs, which then retain, allocate and raise nothing here; so is one
        // that finished or was raised to `qos` already. The others are collected (retained)
        // and raised outside the lock. This replaced a copy of the list
        // (`dependencyList`) and its retains and releases: 3 % of W5's samples with them.
        var direct: [Operation] = []
        readExtras(()) { extras in
            extras.dependencies.forEach { operation in
                let task = operation.task
                if let queue, op_task_qos(task) < 0, op_task_is_on_queue(task, queue) { return }
                // What `promote` would leave alone: finished, or raised to `qos` already.
                if op_task_is_finished(task) || op_task_promoted_qos(task) >= Int32(qos.rawValue) { return }
                direct.append(operation)
            }
        }
        var pending: [Operation] = []
        for operation in direct where Operation.promote(operation, to: qos) {
            operation.dependencyList.forEach { pending.append($0) }
        }
        guard !pending.isEmpty else { return }
        var seen = Set<ObjectIdentifier>()
        var walked = 0
        while let operation = pending.popLast(), walked < Operation.promotionWalkLimit {
            walked += 1
            guard seen.insert(ObjectIdentifier(operation)).inserted,
                  Operation.promote(operation, to: qos) else { continue }
            operation.dependencyList.forEach { pending.append($0) }
        }
    }

    /// Raises `operation` (unfinished) to `qos`; true when that raised it. Only a dependency this
    /// raised leads further: one that already runs at the class (its own QoS, its queue's, or an
    /// earlier raise) raised its own dependencies when it was added or raised. (Walking the whole
    /// chain for every addition took a chain of 10^5 minutes to add.)
    private static func promote(_ operation: Operation, to qos: op_qos_t) -> Bool {
        if op_task_is_finished(operation.task) { return false }
        let before = op_task_promoted_qos(operation.task)
        _ = op_task_promote(operation.task, qos)
        return op_task_promoted_qos(operation.task) != before
    }

    func requestedCoreQoS(on queue: OpaquePointer?) -> op_qos_t {
        let own = op_task_qos(task)
        if own >= 0 { return op_qos_t(UInt32(own)) }
        return queue.map { op_queue_effective_qos($0) } ?? OP_QOS_DEFAULT
    }

    /// Before a wait from a thread or task of class `qos`: raises the receiver and its
    /// dependencies to it (the core raises the receiver itself again when a blocking wait
    /// sleeps; raising it here first also covers the async waits).
    func promoteForWaiter(_ qos: op_qos_t) {
        guard op_runtime_qos_promotion(), !op_task_is_finished(task) else { return }
        _ = op_task_promote(task, qos)
        if !dependencyList.isEmpty { promoteDependencies(to: qos) }
    }
}

extension QualityOfService {
    /// The core class of the calling async task's priority as a waiter (its thread's class
    /// outside a task). `.medium` and unspecified priorities, what a task gets when nobody chose
    /// one, raise nothing (background), as an ordinary thread's waits raise nothing.
    static var currentWaiterCoreClass: op_qos_t {
        guard let priority = withUnsafeCurrentTask(body: { $0?.priority }) else {
            return op_current_thread_qos()
        }
        let qos = QualityOfService(priority)
        return qos == .default ? OP_QOS_BACKGROUND : qos.coreClass
    }
}
