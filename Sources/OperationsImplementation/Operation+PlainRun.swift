// Operation+PlainRun.swift — the fast paths for a plain BlockOperation (the class itself, not a
// subclass) that uses none of the rare features: the queue's run, and start() called by hand.
// Both have the same states and the same order of effects as start() → main() → finish,
// without the calls that only a subclass or an observer could see.
import OperationsCore

extension Operation {
    /// State bits that send an operation down the general path: something may observe or
    /// change how it runs.
    private static let plainRunBlockers: UInt32 = State.cancelled | State.started |
        State.hasObservers | State.readinessHeld | State.hasThreadPriority | State.severalBlocks |
        State.hasCompletion | State.lateDependencies

    /// What sends start() called by hand down the general path besides `plainRunBlockers`: it
    /// finished (start() returns), or it is in a queue (a misuse, or its queue calls start(),
    /// which the general start() handles).
    private static let plainStartBlockers: UInt32 = plainRunBlockers | State.finished |
        State.enqueued | State.queueStarting

    /// Runs the operation on a worker if it is a plain `BlockOperation` with one block, no
    /// observers, no completion block, no thread priority and no underlying queue; false
    /// (having done nothing) when the general path must run it.
    ///
    /// Why skipping is invisible: BlockOperation overrides neither start() nor the KVO calls;
    /// Operation's willChangeValue does nothing and its didChangeValue only calls observers
    /// and reacts to "isFinished" (done here directly); a task the core runs has no
    /// unfinished dependency, so `isReady` holds (a dependency the core could not record,
    /// `lateDependencies`, sends it down the general path). Observers, a completion block or
    /// dependents that appear while the block runs send the finish down the general path
    /// (`markFinished`), which announces readiness to the dependents.
    ///
    /// Touches `self` no more once the core task completed: the caller holds no reference.
    func runPlainFromQueue() -> Bool {
        guard isPlainBlockOperation else { return false }
        let current = state.load(ordering: .acquiring)
        // cancelAllOperations may have cancelled the task in the core only (see runFromQueue).
        if current & Operation.plainRunBlockers != 0 || op_task_is_cancelled(task) { return false }
        if OperationQueue.runningQueueWithUnderlyingQueue() != nil { return false }
        guard claimPlain(current, blockers: Operation.plainRunBlockers) else { return false }
        unsafeDowncast(self, to: BlockOperation.self).runFirstBlock()
        // Finished by the end of its block: one unit of the queue's progress (as start()).
        OperationQueue.countFinishedMainOnCurrentQueue(self)
        finishPlain()
        return true
    }

    /// start() called by hand on a plain `BlockOperation` (the caller checked
    /// `isPlainBlockOperation`) that is ready, in no queue, not cancelled, not started and
    /// uses none of the rare features: what the general start() does for it (started and
    /// executing, the block with the operation as the thread's current task, finished and
    /// completed), in two atomic steps on the state word instead of five and with none of the
    /// calls a subclass could override. False (having done nothing) when the general start()
    /// must run: it also makes every misuse trap as before.
    @inline(__always)
    func startPlainByHand() -> Bool {
        let current = state.load(ordering: .acquiring)
        if current & Operation.plainStartBlockers != 0 { return false }
        let task = self.task
        // Not ready: the general start() traps, naming the operation.
        if !op_task_is_ready(task) { return false }
        guard claimPlain(current, blockers: Operation.plainStartBlockers) else { return false }
        // As start(): a wait on this operation from its own work fails loudly.
        let previousTask = op_task_swap_current(task)
        unsafeDowncast(self, to: BlockOperation.self).runFirstBlock()
        op_task_swap_current(previousTask)
        finishPlain()
        return true
    }

    /// Claims the operation as start() does, started and executing in one step, unless one of
    /// `blockers` (a cancel, an observer) arrived since `current` was read.
    @inline(__always)
    private func claimPlain(_ current: UInt32, blockers: UInt32) -> Bool {
        var current = current
        while true {
            if current & blockers != 0 { return false }
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: current | State.started | State.executing,
                ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
    }

    /// Finished and completed in one step, so no reader sees finished and executing together;
    /// observers, a completion block, dependents or async waiters added meanwhile take the
    /// general finish (`markFinished`). Then the core task completes. Touches `self` no more
    /// once the core task completed.
    @inline(__always)
    private func finishPlain() {
        var current = state.load(ordering: .relaxed)
        while true {
            if current & (State.hasObservers | State.hasCompletion | State.hasDependents | State.hasFinishWaiters) != 0 {
                finishPlainGenerally()
                return
            }
            // dependentsClosed: a dependent registering after this sees it and waits for the
            // core task's finish just below (no user code runs in between); so does an async
            // waiter registering after this, yielding until that finish is over.
            let desired = (current | State.finished | State.completed | State.dependentsClosed) & ~State.executing
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        op_task_complete(task)
    }

    /// The general finish for a plain run that something started to watch while its block ran.
    @inline(never)
    private func finishPlainGenerally() {
        // markFinished reads the state again after the core task completed, when the queue's
        // reference may already be gone: hold one of our own across it.
        let held = Unmanaged.passUnretained(self).retain()
        markFinished()
        held.release()
    }
}
