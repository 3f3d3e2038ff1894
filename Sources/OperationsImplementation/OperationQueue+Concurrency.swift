// OperationQueue+Concurrency.swift — the queue's async API: waits that suspend the calling task
// instead of blocking its thread, and async closures as operations.
import OperationsCore

extension OperationQueue {
    /// Suspends the calling task until the queue holds no unfinished operation, without
    /// blocking a thread: the async counterpart of `waitUntilAllOperationsAreFinished()`, with
    /// its semantics (operations added meanwhile extend the wait; jobs of tasks already
    /// enqueued on the queue count too). It resumes the first time the queue is seen empty.
    ///
    /// Cancelling the waiting task does not end the wait. Called from the body of one of the
    /// queue's own `TaskOperation`s, or while every operation left waits on a dependency cycle,
    /// it traps with a message naming the queue.
    public func waitUntilAllOperationsAreFinished() async {
        if let running = TaskOperation.runningBody, running.runningQueue === self, running.isCurrentBodyTask {
            operationMisuse("await waitUntilAllOperationsAreFinished() called on \(self) from the body of its own \(running); it would wait forever")
        }
        if op_queue_unfinished(core) != 0 && !isSuspended, let cycle = dependencyCycleHoldingEveryOperation() {
            operationMisuse("await waitUntilAllOperationsAreFinished() on \(self) would wait forever: dependency cycle \(Operation.describeCycle(cycle))")
        }
        // No priority inversion: the queue's operations run at least at the waiting task's
        // priority until the wait ends.
        let waiter = QualityOfService.currentWaiterCoreClass
        // Only a raise that was made is undone (promotion may be switched off meanwhile).
        let promoted = waiter.rawValue > op_queue_effective_qos(core).rawValue && op_queue_unfinished(core) != 0
            && op_queue_promote(core, waiter) == 0
        defer { if promoted { op_queue_unpromote(core, waiter) } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let box = Unmanaged.passRetained(IdleWaiter(continuation)).toOpaque()
            let rc = op_queue_notify_idle(core, resumeIdleWaiter, box)
            if rc != 0 { fatalError("Operations: await waitUntilAllOperationsAreFinished() on \(self) failed (core error \(rc))") }
        }
    }

    /// Adds all `operations` before any of them starts, then suspends the calling task until
    /// all of them finished: the async counterpart of
    /// `addOperations(operations, waitUntilFinished: true)`, which blocks a thread.
    ///
    /// It has a name of its own so that a non-waiting
    /// `addOperations(_:waitUntilFinished: false)` in async code stays the synchronous
    /// Foundation call and compiles without `await`.
    public func addOperationsAndWait(_ operations: [Operation]) async {
        submitAll(operations)
        for operation in operations { await operation.waitUntilFinished() }
    }

    /// Adds an async closure as a ``TaskOperation`` that reports the queue's
    /// `qualityOfService`, and returns it (to await, cancel, or read its `error`).
    ///
    /// Foundation has no async form of `addOperation(_:)`; this one has a name of its own so
    /// that it cannot make a client's own `addOperation` extensions ambiguous.
    ///
    /// ```swift
    /// let refresh = queue.addTaskOperation { try await refreshCache() }
    /// await refresh.waitUntilFinished()
    /// ```
    @discardableResult
    public func addTaskOperation(_ body: @escaping @Sendable () async throws -> Void) -> TaskOperation {
        let operation = TaskOperation(body)
        addOperationReportingQueueQoS(operation)
        return operation
    }
}

/// A continuation waiting for a queue to go idle (the context of op_queue_notify_idle).
private final class IdleWaiter {
    let continuation: CheckedContinuation<Void, Never>
    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }
}

private let resumeIdleWaiter: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    Unmanaged<IdleWaiter>.fromOpaque(context).takeRetainedValue().continuation.resume()
}
