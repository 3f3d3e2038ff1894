// Operation+AsyncWait.swift — `await operation.waitUntilFinished()`: the waiting task suspends
// (its thread goes back to its executor) and is resumed when the operation completes.
//
// A waiter appends its continuation to the extras, then sets `hasFinishWaiters` in the state
// word; completing sets `dependentsClosed` in the same word after the core task finished. Both
// are read-modify-writes of one atomic word, so one of the two sees the other's bit: a waiter
// that sees `dependentsClosed` resumes the waiters itself, and completion resumes them when it
// sees `hasFinishWaiters`. Each continuation is taken from the extras under the operation's
// lock by one of them only, so each waiter resumes exactly once. The queue's fast path
// (Operation+PlainRun.swift) sets `dependentsClosed` just before its core task finishes: before
// it returns, a waiter waits out that finish (`awaitCoreFinish`, yielding, never blocking its
// thread), so it returns with the dependents counted down, as the blocking wait does.
import OperationsCore

extension Operation {
    /// Suspends the calling task until the operation finished (ran, or was cancelled and then
    /// started by its queue), without blocking a thread: the async counterpart of
    /// `waitUntilFinished()`, with its semantics. It returns once `isFinished` reads true and
    /// the operation's dependents have been released.
    ///
    /// Cancelling the waiting task does not end the wait (cancel the operation for that).
    /// Awaiting a `TaskOperation` from inside its own body, or an operation that waits on a
    /// dependency cycle while nothing runs, traps with a message naming the operation.
    public func waitUntilFinished() async {
        // acquiring: what the operation did is visible once the wait returns.
        if state.load(ordering: .acquiring) & State.dependentsClosed != 0 {
            await awaitCoreFinish()
            return
        }
        if let running = TaskOperation.runningBody, running === self, running.isCurrentBodyTask {
            operationMisuse("await waitUntilFinished() called on \(self) from inside its own body; it would wait forever")
        }
        // A cycle (D4) is reported now when a short walk finds it; a graph too big for that is
        // walked later, off this task, while the wait lasts (`watchForCycle`).
        var cycleUndecided = false
        if !isExecuting {
            let search = Operation.dependencyCycle(reachableFrom: [self], visitLimit: Operation.immediateCycleCheckLimit)
            if let cycle = search.cycle {
                operationMisuse("await waitUntilFinished() on \(self) would wait forever: dependency cycle \(Operation.describeCycle(cycle))")
            }
            cycleUndecided = search.stoppedAtLimit
        }
        if cycleUndecided { watchForCycle() }
        // No priority inversion: the operation and its dependencies run at least at the
        // waiting task's priority until they finished.
        promoteForWaiter(QualityOfService.currentWaiterCoreClass)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            withExtras { $0.finishWaiters.append(continuation) }
            // acquiringAndReleasing: the append is visible to a completion that sees the bit,
            // and we see its finish when we see its mark.
            let old = state.bitwiseOr(State.hasFinishWaiters, ordering: .acquiringAndReleasing).oldValue
            if old & State.dependentsClosed != 0 { resumeFinishWaiters() }
        }
        // Resumed by the completion (its core task's finish is over) or by ourselves above,
        // after the fast path's mark, which comes just before that finish.
        await awaitCoreFinish()
    }

    /// Returns once the core task's finish is over (its dependents counted down), after
    /// `dependentsClosed` was seen: at most the fast path's `op_task_complete` still runs on
    /// the finishing thread, with no user code in it. Yields meanwhile instead of blocking the
    /// thread. (No promotion: the task is finished, only its count-downs remain.)
    private func awaitCoreFinish() async {
        let task = self.task
        // A core reference ThreadSanitizer sees across the looks (as the blocking wait's).
        op_task_retain(task)
        defer { op_task_release(task) }
        while !op_task_finish_is_over(task) { await Task.yield() }
    }

    /// How many operations the async wait's first look for a cycle visits: the wait must not
    /// walk a graph of 10^6 operations at every call (waiting for each operation of a long chain
    /// in turn would be quadratic).
    static let immediateCycleCheckLimit = 4096

    /// Looks for a dependency cycle holding the operation, as the blocking wait does (after
    /// 100 ms, then at doubling intervals), from a task of its own, until the operation
    /// finished: for an async wait on a graph too big for its first look.
    private func watchForCycle() {
        let task = self.task
        op_task_retain(task) // released when the watch ends: the look below reads the task
        Task.detached(priority: .background) { [self] in
            defer { op_task_release(task) }
            var slice = Operation.cycleCheckIntervalNs
            while !op_task_is_finished(task) {
                try? await Task.sleep(nanoseconds: UInt64(slice))
                if op_task_is_finished(task) { return }
                if !isExecuting, let cycle = reachableDependencyCycle() {
                    operationMisuse("await waitUntilFinished() on \(self) would wait forever: dependency cycle \(Operation.describeCycle(cycle))")
                }
                slice = min(slice * 2, Operation.cycleCheckLongestIntervalNs)
            }
        }
    }

    /// Resumes every async waiter registered so far (each once), outside the lock.
    func resumeFinishWaiters() {
        let waiters = StripedLock.shared.withLock(for: self) { () -> [CheckedContinuation<Void, Never>] in
            guard let extras = lockedExtras else { return [] }
            let waiters = extras.finishWaiters
            extras.finishWaiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
