// Operation+PlainRun.swift — the queue's fast path for a plain BlockOperation (the class
// itself, not a subclass) that uses none of the rare features: the same states and the same
// order of effects as start() → main() → finish, without the calls that only a subclass or an
// observer could see.
import OperationsCore

extension Operation {
    /// State bits that send an operation down the general path: something may observe or
    /// change how it runs.
    private static let plainRunBlockers: UInt32 = State.cancelled | State.started |
        State.hasObservers | State.readinessHeld | State.hasThreadPriority | State.severalBlocks |
        State.hasCompletion | State.lateDependencies

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
        var current = state.load(ordering: .acquiring)
        // cancelAllOperations may have cancelled the task in the core only (see runFromQueue).
        if current & Operation.plainRunBlockers != 0 || op_task_is_cancelled(task) { return false }
        if OperationQueue.runningQueueWithUnderlyingQueue() != nil { return false }
        // Claim it as start() does: started and executing in one step, unless a blocker
        // (a cancel, an observer) arrived meanwhile.
        while true {
            if current & Operation.plainRunBlockers != 0 { return false }
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: current | State.started | State.executing,
                ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        unsafeDowncast(self, to: BlockOperation.self).runFirstBlock()
        OperationQueue.countFinishedMainOnCurrentQueue(self)
        // Finished and completed in one step, so no reader sees finished and executing
        // together; observers or a completion block added meanwhile take the general finish.
        current = state.load(ordering: .relaxed)
        while true {
            if current & (State.hasObservers | State.hasCompletion | State.hasDependents | State.hasFinishWaiters) != 0 {
                // markFinished reads the state again after the core task completed, when the
                // queue's reference may already be gone: hold one of our own across it.
                let held = Unmanaged.passUnretained(self).retain()
                markFinished()
                held.release()
                return true
            }
            // dependentsClosed: a dependent registering after this sees it and waits for the
            // core task's finish just below (no user code runs in between); an async waiter
            // registering after this returns at once (the operation is finished).
            let desired = (current | State.finished | State.completed | State.dependentsClosed) & ~State.executing
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        op_task_complete(task)
        return true
    }
}
