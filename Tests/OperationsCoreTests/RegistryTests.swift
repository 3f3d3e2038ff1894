// RegistryTests.swift — tracking queues (registry.c): listing in submission order, release of
// contexts once finished, cancel-all, and barriers (also under concurrent submitters).
import Glibc
import OperationsCore
import Synchronization
import Testing

/// State shared by the registry tests' bodies (through the task context).
private final class RegistryProbe: Sendable {
    let ran = Atomic<Int>(0)
    let released = Atomic<Int>(0)
    /// Tasks submitted before the current barrier that have finished.
    let beforeDone = Atomic<Int>(0)
    /// What the barrier expects in beforeDone when it runs.
    let beforeExpected = Atomic<Int>(0)
    /// Set by the barrier body; read by tasks submitted after it.
    let barrierRan = Atomic<Bool>(false)
    let violations = Atomic<Int>(0)
}

/// A tracked task's context: the probe, and what kind of task it is.
private final class RegistryItem {
    enum Kind { case plain, before, after, barrier }
    let probe: RegistryProbe
    let kind: Kind
    let index: Int
    init(_ probe: RegistryProbe, _ kind: Kind, _ index: Int = 0) {
        self.probe = probe
        self.kind = kind
        self.index = index
    }
}

private let registryBody: TaskBody = { context in
    let item = Unmanaged<RegistryItem>.fromOpaque(context!).takeUnretainedValue()
    let probe = item.probe
    switch item.kind {
    case .plain: break
    case .before: probe.beforeDone.add(1, ordering: .acquiringAndReleasing)
    case .after:
        if !probe.barrierRan.load(ordering: .acquiring) { probe.violations.add(1, ordering: .relaxed) }
    case .barrier:
        if probe.beforeDone.load(ordering: .acquiring) != probe.beforeExpected.load(ordering: .acquiring) {
            probe.violations.add(1, ordering: .relaxed)
        }
        probe.barrierRan.store(true, ordering: .releasing)
    }
    probe.ran.add(1, ordering: .relaxed)
}

/// release_context: the registry hands back the context it kept alive.
private let releaseItem: TaskBody = { context in
    let item = Unmanaged<RegistryItem>.fromOpaque(context!).takeRetainedValue()
    item.probe.released.add(1, ordering: .relaxed)
}

private func submitTracked(_ queue: OpaquePointer, _ item: RegistryItem, barrier: Bool = false,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    let task = try makeTask(registryBody, Unmanaged.passRetained(item).toOpaque(), sourceLocation: sourceLocation)
    let rc = barrier ? op_queue_submit_barrier(queue, task) : op_queue_submit(queue, task)
    #expect(rc == 0, "submit returned \(errnoName(rc))", sourceLocation: sourceLocation)
    op_task_release(task)
}

/// A task of barriersFromSeveralThreadsKeepEachThreadsOrderAndNeverWaitInACycle: takes a
/// ticket from a shared clock when it runs.
private final class TicketItem: Sendable {
    let clock: TicketClock
    let ticket = Atomic<Int>(-1)
    let released = Atomic<Bool>(false)
    init(clock: TicketClock) { self.clock = clock }
}

private final class TicketClock: Sendable {
    let now = Atomic<Int>(0)
}

private let ticketBody: TaskBody = { context in
    let item = Unmanaged<TicketItem>.fromOpaque(context!).takeUnretainedValue()
    item.ticket.store(item.clock.now.add(1, ordering: .acquiringAndReleasing).newValue, ordering: .releasing)
}

private let releaseTicketItem: TaskBody = { context in
    let item = Unmanaged<TicketItem>.fromOpaque(context!).takeRetainedValue()
    item.released.store(true, ordering: .releasing)
}

private func makeTrackedQueue(_ label: String, width: Int32 = OP_WIDTH_DEFAULT) throws -> OpaquePointer {
    let queue = try makeQueue(label, width: width)
    #expect(op_queue_set_tracking(queue, releaseItem) == 0)
    return queue
}

/// The indices of the listed tasks, in listing order.
private func listedIndices(_ queue: OpaquePointer) -> [Int] {
    final class Box { var indices: [Int] = [] }
    let box = Box()
    withExtendedLifetime(box) {
        op_queue_for_each(queue, { task, arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeUnretainedValue()
            let item = Unmanaged<RegistryItem>.fromOpaque(op_task_context(task)!).takeUnretainedValue()
            box.indices.append(item.index)
        }, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.indices
}

@Suite(.sharesProcess)
struct RegistryTests {
    @Test func trackingIsRefusedOnceTasksWereSubmitted() throws {
        let queue = try makeQueue("late-tracking")
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        #expect(op_queue_submit_f(queue, emptyBody, nil) == 0)
        #expect(op_queue_set_tracking(queue, nil) == EBUSY)
        #expect(op_queue_set_tracking(nil, nil) == EINVAL)
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }

    /// In a child process (release_help_probe.c: it holds every background worker, the class of
    /// the helper that releases batches of finished contexts): a wait for a tracking queue
    /// returns with every finished context released while the background class is held, by
    /// raising the helper. Before, the waiter spun until the background class ran again (here
    /// 20 s later, when the spinners gave up). Review of issue 33 found the raise made only with
    /// QoS promotion on ("promotion-off") and none for an ordinary thread waiting for a
    /// background queue ("background-queue"): both waited the 20 s.
    @Test(arguments: ["default", "promotion-off", "background-queue"])
    func aWaiterIsNotHeldUpByASaturatedBackgroundClass(_ mode: String) async throws {
        let path = try await ProbeBuilder.shared.binary("release_help_probe").get()
        let result = await runChild(path, [mode], environment: childEnvironment(), seconds: 90, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the release-help probe did not exit:\n\(result)")
        try #require(result.exitCode == 0, "the release-help probe failed:\n\(result)")
        let values = result.values
        #expect(values["wait_rc"] == "0", "\(result)")
        #expect(values["released"] == values["submitted"], "not every finished context was released on return:\n\(result)")
        #expect(values["spinners_running"] == "1",
                "the wait returned only after the background class ran again (\(values["wait_ms"] ?? "?") ms):\n\(result)")
    }

    /// Issue 33, item 8: fork() while a tracking queue's finished contexts are held by a worker
    /// for release (release_fork_probe.c). In the child that worker does not exist: a timed
    /// op_queue_wait returns ETIMEDOUT within its timeout instead of spinning for ever; the
    /// parent's wait returns 0 with every context released once they are let go.
    @Test func aForkWhileContextsAreBeingReleasedLeavesTheChildsWaitBounded() async throws {
        let path = try await ProbeBuilder.shared.binary("release_fork_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the release-fork probe did not exit:\n\(result)")
        try #require(result.exitCode == 0, "the release-fork probe failed:\n\(result)")
        let values = result.values
        #expect(values["child_exit"] == "0", "the child's wait did not return (killed after 10 s):\n\(result)")
        #expect(values["child_rc"] == "\(ETIMEDOUT)", "\(result)")
        #expect((values["child_ms"].flatMap { Int($0) } ?? .max) < 1_000, "the child's 50 ms wait overran:\n\(result)")
        #expect(values["parent_rc"] == "0", "\(result)")
        #expect(values["released"] == values["submitted"], "\(result)")
    }

    /// Found by review of issue 33's release change: a body of queue A completes a task X of
    /// tracking queue B, then waits for B. X's context must not wait for the end of A's drain
    /// (where it was kept at first), or the wait waits for itself: it is released before the
    /// completion returns, since the body holds nothing of B.
    @Test func aBodyThatCompletesATaskOfAnotherQueueCanThenWaitForThatQueue() throws {
        final class Probe: Sendable {
            let released = Atomic<Int>(0)
            let waitRc = Atomic<Int32>(-1)
            let task = Locked<OpaquePointer?>(nil)
            let other = Locked<OpaquePointer?>(nil)
        }
        let probe = Probe()
        let a = try makeQueue("release-self-wait-a", width: 1)
        defer { op_queue_release(a) }
        let b = try makeQueue("release-self-wait-b")
        defer { op_queue_release(b) }
        #expect(op_queue_set_tracking(b, { context in
            Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue().released.add(1, ordering: .relaxed)
        }) == 0)
        let x = try makeTask(emptyBody, contextPointer(probe), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
        defer { op_task_release(x) }
        probe.task.withLock { $0 = x }
        probe.other.withLock { $0 = b }
        #expect(op_queue_submit(b, x) == 0)
        #expect(eventually { op_task_is_executing(x) })
        let y = try makeTask({ context in
            let probe = Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue()
            _ = op_task_complete(probe.task.withLock { $0 }!)
            probe.waitRc.store(op_queue_wait(probe.other.withLock { $0 }!, 3_000_000_000), ordering: .relaxed)
        }, contextPointer(probe))
        defer { op_task_release(y) }
        #expect(op_queue_submit(a, y) == 0)
        #expect(op_task_wait(y, Limits.waitNs) == 0)
        let rc = probe.waitRc.load(ordering: .relaxed)
        #expect(rc == 0, "op_queue_wait(B) from a body of A that completed B's task returned \(errnoName(rc))")
        #expect(probe.released.load(ordering: .relaxed) == 1)
    }

    /// Found by review of issue 33's release change: op_task_complete on a task still queued
    /// behind another, whose queue lives only on its busy units (its handle dropped), while the
    /// finish takes a while (on_finish): the worker retires the finished task and frees the queue
    /// meanwhile, and the completion counted the context for release after that, on freed memory
    /// (AddressSanitizer, in CI's run of these tests). Kept, the queue's wait returned before the
    /// context was counted, so before it was released. Now the completion touches no queue: the
    /// worker that retires the task, and gives back its unit, takes its context.
    @Test(arguments: [false, true])
    func aCompletionOfAQueuedTaskLeavesItsContextToTheWorkerThatRetiresIt(keepTheQueue: Bool) throws {
        final class Probe: Sendable { let released = Atomic<Int>(0) }
        let probe = Probe()
        let queue = try makeQueue("release-count-ahead", width: 1)
        #expect(op_queue_set_tracking(queue, { context in
            Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue().released.add(1, ordering: .relaxed)
        }) == 0)
        let blocker = try makeTask({ _ in usleep(5_000) }, contextPointer(probe))
        let x = try makeTask(emptyBody, contextPointer(probe), flags: UInt32(OP_TASK_MANUAL_COMPLETION),
                             onFinish: { _ in usleep(50_000) })
        defer {
            op_task_release(blocker)
            op_task_release(x)
        }
        #expect(op_queue_submit(queue, blocker) == 0)
        #expect(op_queue_submit(queue, x) == 0) // queued behind the blocker on the serial queue
        if !keepTheQueue { op_queue_release(queue) } // it lives on its busy units
        let handle = Locked<OpaquePointer?>(x)
        let completer = onNewThread { _ = op_task_complete(handle.withLock { $0 }!) }
        if keepTheQueue {
            usleep(1_000)
            #expect(op_queue_wait(queue, Limits.waitNs) == 0)
            #expect(probe.released.load(ordering: .relaxed) == 2, "the wait returned before the completed task's context was released")
            op_queue_release(queue)
        }
        #expect(completer.wait(seconds: Limits.waitSeconds))
        #expect(eventually { probe.released.load(ordering: .relaxed) == 2 })
    }

    /// Found by the second review of issue 33's release change: two threads complete the same
    /// manual-completion task of a queue whose handle was dropped; the one that loses must not
    /// touch the queue, which the winner's settling may have freed (AddressSanitizer in CI).
    @Test func twoCompletionsOfOneTaskOfADroppedQueueTouchNoFreedQueue() throws {
        final class Round: Sendable {
            let task = Locked<OpaquePointer?>(nil)
            let go = Atomic<Int>(0)
            let released = Atomic<Int>(0)
        }
        let rounds = runningUnderSanitizer ? 200 : 1000
        for _ in 0..<rounds {
            let round = Round()
            let queue = try makeQueue("double-completion")
            #expect(op_queue_set_tracking(queue, { context in
                Unmanaged<Round>.fromOpaque(context!).takeUnretainedValue().released.add(1, ordering: .relaxed)
            }) == 0)
            let task = try makeTask(emptyBody, contextPointer(round), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
            round.task.withLock { $0 = task }
            #expect(op_queue_submit(queue, task) == 0)
            op_queue_release(queue) // lives on its busy units
            let completers = (0..<2).map { _ in
                onNewThread {
                    round.go.add(1, ordering: .relaxed)
                    while round.go.load(ordering: .relaxed) < 2 {}
                    _ = op_task_complete(round.task.withLock { $0 }!)
                }
            }
            for completer in completers { #expect(completer.wait(seconds: Limits.waitSeconds)) }
            #expect(op_task_wait(task, Limits.waitNs) == 0)
            #expect(eventually { round.released.load(ordering: .relaxed) == 1 }, "the context was released \(round.released.load(ordering: .relaxed)) times")
            op_task_release(task)
        }
    }

    /// Found by the second review: a listing's callback that completes a listed task. Its
    /// release takes the registry lock the listing holds (the fence): the thread waited for
    /// itself. Now the context is kept until the listing dropped the lock, then released.
    @Test func aListingsCallbackThatCompletesAListedTaskReturns() throws {
        final class Probe: Sendable {
            let ran = Atomic<Int>(0)
            let released = Atomic<Int>(0)
        }
        let probe = Probe()
        let queue = try makeQueue("complete-in-listing", width: 1)
        defer { op_queue_release(queue) }
        #expect(op_queue_set_tracking(queue, { context in
            Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue().released.add(1, ordering: .relaxed)
        }) == 0)
        let task = try makeTask({ context in
            Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue().ran.add(1, ordering: .relaxed)
        }, contextPointer(probe), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(eventually { probe.ran.load(ordering: .relaxed) == 1 })
        let handle = Locked<OpaquePointer?>(queue)
        let listed = onNewThread {
            op_queue_for_each(handle.withLock { $0 }!, { task, _ in _ = op_task_complete(task) }, nil)
        }
        #expect(listed.wait(seconds: Limits.waitSeconds), "op_queue_for_each whose callback completes a listed task did not return")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(probe.released.load(ordering: .relaxed) == 1)
    }

    /// Found by the second review: a release that completes a task of another queue B released
    /// B's context only after the rest of its round, so a later release of the round that waited
    /// (through another thread) for B waited for itself. Now what a release takes is released
    /// right after it.
    @Test func aReleaseThatCompletesAnotherQueuesTaskReleasesItsContextAtOnce() throws {
        final class Probe: Sendable {
            let ran = Atomic<Int>(0)
            let waitRc = Atomic<Int32>(-1)
            let taskOfB = Locked<OpaquePointer?>(nil)
            let b = Locked<OpaquePointer?>(nil)
        }
        let probe = Probe()
        let context = contextPointer(probe)
        let a = try makeQueue("nested-release-a", width: 2)
        defer { op_queue_release(a) }
        let b = try makeQueue("nested-release-b", width: 1)
        defer { op_queue_release(b) }
        probe.b.withLock { $0 = b }
        // A's first context completes B's task; its second waits for B from another thread.
        #expect(op_queue_set_tracking(a, { context in
            let probe = Unmanaged<Probe>.fromOpaque(UnsafeMutableRawPointer(bitPattern: UInt(bitPattern: context) & ~1)!).takeUnretainedValue()
            if UInt(bitPattern: context) & 1 == 1 {
                _ = op_task_complete(probe.taskOfB.withLock { $0 }!)
            } else {
                let waiter = onNewThread {
                    probe.waitRc.store(op_queue_wait(probe.b.withLock { $0 }!, 3_000_000_000), ordering: .relaxed)
                }
                _ = waiter.wait(seconds: 5)
            }
        }) == 0)
        #expect(op_queue_set_tracking(b, { _ in }) == 0)
        let manual = UInt32(OP_TASK_MANUAL_COMPLETION)
        let counting: TaskBody = { context in
            Unmanaged<Probe>.fromOpaque(UnsafeMutableRawPointer(bitPattern: UInt(bitPattern: context) & ~1)!)
                .takeUnretainedValue().ran.add(1, ordering: .relaxed)
        }
        let first = try makeTask(counting, UnsafeMutableRawPointer(bitPattern: UInt(bitPattern: context) | 1), flags: manual)
        let second = try makeTask(counting, context, flags: manual)
        let ofB = try makeTask(counting, context, flags: manual)
        defer { for task in [first, second, ofB] { op_task_release(task) } }
        probe.taskOfB.withLock { $0 = ofB }
        #expect(op_queue_submit(a, first) == 0)
        #expect(op_queue_submit(a, second) == 0)
        #expect(op_queue_submit(b, ofB) == 0)
        #expect(eventually { probe.ran.load(ordering: .relaxed) == 3 })
        usleep(10_000) // the bodies returned (manual completion): the completions settle them
        // A binding's body of A completes both: their contexts are released in one round when
        // it ends (op_queue_swap_current back to none).
        let previous = op_queue_swap_current(a)
        _ = op_task_complete(first)
        _ = op_task_complete(second)
        op_queue_swap_current(previous)
        #expect(probe.waitRc.load(ordering: .relaxed) == 0, "op_queue_wait(B) from a later release returned \(errnoName(probe.waitRc.load(ordering: .relaxed)))")
        #expect(op_queue_wait(a, Limits.waitNs) == 0)
    }

    /// Found by the second review: a thread that settled tasks kept a buffer for their contexts
    /// that nothing freed when it ended (LeakSanitizer, in CI's run of these tests, sees it).
    @Test func threadsThatSettleTasksAndEndLeaveNothingBehind() throws {
        final class Probe: Sendable { let released = Atomic<Int>(0) }
        let probe = Probe()
        let count = 20
        let queue = try makeQueue("settle-and-end", width: Int32(count)) // every body runs at once
        defer { op_queue_release(queue) }
        #expect(op_queue_set_tracking(queue, { context in
            Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue().released.add(1, ordering: .relaxed)
        }) == 0)
        var tasks: [OpaquePointer] = []
        for _ in 0..<count {
            let task = try makeTask(emptyBody, contextPointer(probe), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
            #expect(op_queue_submit(queue, task) == 0)
            tasks.append(task)
        }
        #expect(eventually { tasks.allSatisfy { op_task_is_executing($0) } })
        usleep(10_000) // their bodies returned: each completion settles its task
        let handles = Locked(tasks)
        let threads = (0..<count).map { index in onNewThread { _ = op_task_complete(handles.withLock { $0[index] }) } }
        for thread in threads { #expect(thread.wait(seconds: Limits.waitSeconds)) }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(probe.released.load(ordering: .relaxed) == count)
        for task in tasks { op_task_release(task) }
    }

    /// Found by review of issue 33's release change: a release that blocks where the core cannot
    /// see (a deinit waiting on a semaphore for work of its own class) runs on a worker between
    /// tasks, which the blocked-worker monitor did not look at: with one worker per class (one
    /// CPU) that work never ran. Now a releasing worker shows the monitor a body, and a spare
    /// stands in for it (release_block_probe.c, pinned to one CPU).
    @Test func aReleaseThatBlocksInvisiblyGetsASpareStandingInForItsWorker() async throws {
        let path = try await ProbeBuilder.shared.binary("release_block_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the release-block probe did not exit:\n\(result)")
        #expect(result.values["in_body"] == "ran", "the control case (the same wait in a body) did not run:\n\(result)")
        #expect(result.values["in_release"] == "ran", "the work a blocked release waits for never ran:\n\(result)")
        #expect(result.exitCode == 0, "\(result)")
    }

    /// Issue 33, item 8: a timed op_queue_wait keeps its deadline while the queue's finished
    /// contexts are released slowly (2 ms each). It helped release them before, in slices of
    /// 128: a 10 ms wait took 0.88 s.
    @Test func aTimedWaitKeepsItsDeadlineWhileContextsAreReleasedSlowly() throws {
        final class Slow: Sendable { let released = Atomic<Int>(0) }
        let slow = Slow()
        let queue = try makeQueue("slow-release")
        defer { op_queue_release(queue) }
        #expect(op_queue_set_tracking(queue, { context in
            let slow = Unmanaged<Slow>.fromOpaque(context!).takeRetainedValue()
            usleep(2_000)
            slow.released.add(1, ordering: .relaxed)
        }) == 0)
        let count = 400
        for _ in 0..<count {
            let task = try makeTask(emptyBody, Unmanaged.passRetained(slow).toOpaque())
            #expect(op_queue_submit(queue, task) == 0)
            op_task_release(task)
        }
        #expect(eventually { op_queue_unfinished(queue) == 0 }, "the tasks did not finish")
        let start = monotonicNs()
        let rc = op_queue_wait(queue, 10_000_000)
        let elapsedMs = (monotonicNs() - start) / 1_000_000
        #expect(rc == 0 || rc == ETIMEDOUT)
        #expect(elapsedMs < 200, "a 10 ms op_queue_wait took \(elapsedMs) ms (rc \(errnoName(rc)), \(slow.released.load(ordering: .relaxed)) of \(count) released)")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(slow.released.load(ordering: .relaxed) == count, "every context released once the untimed wait returned")
    }

    @Test func listingShowsUnfinishedTasksOldestFirstAndReleasesEachContextOnce() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("listing")
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        let count = 300 // past the compaction threshold, so compaction runs while tasks wait
        for index in 0..<count { try submitTracked(queue, RegistryItem(probe, .plain, index)) }
        #expect(listedIndices(queue) == Array(0..<count), "listing is not in submission order")
        #expect(probe.released.load(ordering: .relaxed) == 0, "a context was released before its task finished")
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not drain")
        #expect(probe.ran.load(ordering: .relaxed) == count)
        // The queue compacts when it goes idle, before waiters are woken.
        #expect(probe.released.load(ordering: .relaxed) == count, "every context is released once the queue is idle")
        #expect(listedIndices(queue).isEmpty)
    }

    /// Compaction unlinks finished tasks from between unfinished ones and keeps the rest in
    /// order: alone, in runs of two, in a long run, at either end; and a compaction that removes
    /// nothing leaves the list as it was (kept runs keep their links unwritten: issue 36).
    @Test func compactionKeepsTheUnfinishedInOrderWhateverFinishedBetweenThem() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("compaction-runs")
        defer { op_queue_release(queue) }
        let gateQueue = try makeQueue("compaction-gate")
        defer { op_queue_release(gateQueue) }
        // The gate has no context: it may run after this test returned (a failure below).
        let gate = try makeTask({ _ in }, nil)
        // Whatever happens below, the gate runs once, so the held tasks run and their contexts go.
        var gateSubmitted = false
        func openTheGate() {
            if gateSubmitted { return }
            gateSubmitted = true
            #expect(op_queue_submit(gateQueue, gate) == 0)
            op_task_release(gate)
        }
        defer { openTheGate() }
        // Over 2 000 finish: past OP_REGISTRY_MIN_COMPACT (1 024 finishes), so the drainers
        // compact as well, while tasks are still being submitted when the workers keep up with
        // the submitter (then splicing what they keep below what is pushed meanwhile); the
        // listings compact what is left.
        let count = 3_000
        // Held back by the gate: two of every three up to 600, all of 600..<900, the last one.
        func held(_ index: Int) -> Bool {
            (index < 600 && index % 3 != 0) || (600..<900).contains(index) || index == count - 1
        }
        var free: [OpaquePointer] = []
        defer { free.forEach { op_task_release($0) } }
        for index in 0..<count {
            let task = try makeTask(registryBody, Unmanaged.passRetained(RegistryItem(probe, .plain, index)).toOpaque())
            if held(index) { #expect(op_task_add_dependency(task, gate) == 0) }
            #expect(op_queue_submit(queue, task) == 0)
            if held(index) { op_task_release(task) } else { free.append(task) }
        }
        // One deadline for all of them.
        let deadline = monotonicNs() + Limits.waitNs
        for task in free {
            let left = deadline - monotonicNs()
            let rc = left > 0 ? op_task_wait(task, left) : ETIMEDOUT
            try #require(rc == 0, "the tasks that wait for nothing did not all finish within \(Limits.waitSeconds) s")
        }
        let expected = (0..<count).filter(held)
        for listing in ["first", "second (nothing left to remove)"] {
            let listed = listedIndices(queue)
            let inOrder = listed == expected
            let firstDifference = zip(listed, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(listed.count, expected.count)
            #expect(inOrder, "the \(listing) listing: \(listed.count) tasks, \(expected.count) expected, the first difference at position \(firstDifference)")
        }
        openTheGate()
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the held tasks did not run once the gate ran")
        #expect(listedIndices(queue).isEmpty)
        #expect(probe.released.load(ordering: .relaxed) == count, "every tracked context released once")
    }

    /// A listing taken while another thread keeps adding tasks holds every task added before
    /// it, oldest first: what is added meanwhile may or may not be in it, but never pushes the
    /// oldest out. (The snapshot used to walk the registry twice from its head, count first and
    /// then fill; tasks pushed between the two walks made it fill the newest n and drop the
    /// oldest, so a barrier could miss the barrier before it.)
    @Test func aListingTakenWhileTasksAreAddedKeepsTheOldestOnes() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("listing-while-adding")
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        let first = 100
        for index in 0..<first { try submitTracked(queue, RegistryItem(probe, .plain, index)) }
        let added = scaled(20_000, tsan: 5_000)
        let adding = Atomic<Bool>(true)
        let listings = Atomic<Int>(0)
        let broken = Atomic<Int>(0)
        let brokenStart = Atomic<Int>(-1)
        let brokenCount = Atomic<Int>(-1)
        let shared = SendablePointer(queue)
        let finished = runThreads(2) { thread in
            if thread == 0 {
                for index in first..<(first + added) {
                    try? submitTracked(shared.raw, RegistryItem(probe, .plain, index))
                }
                adding.store(false, ordering: .releasing)
                return
            }
            // One submitting thread: a correct listing is tasks 0, 1, 2, … up to wherever the
            // adder had got to.
            while adding.load(ordering: .acquiring) {
                let listing = listedIndices(shared.raw)
                listings.add(1, ordering: .relaxed)
                if listing.count < first || listing != Array(0..<listing.count) {
                    if broken.add(1, ordering: .relaxed).newValue == 1 {
                        brokenStart.store(listing.first ?? -1, ordering: .relaxed)
                        brokenCount.store(listing.count, ordering: .relaxed)
                    }
                }
            }
        }
        try #require(finished, "adding and listing did not finish within \(Limits.waitSeconds) s")
        #expect(broken.load(ordering: .relaxed) == 0,
                "\(broken.load(ordering: .relaxed)) of \(listings.load(ordering: .relaxed)) listings left out the oldest tasks; the first began at task \(brokenStart.load(ordering: .relaxed)) with \(brokenCount.load(ordering: .relaxed)) tasks")
        #expect(listedIndices(queue) == Array(0..<(first + added)))
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not drain")
        #expect(probe.released.load(ordering: .relaxed) == first + added)
    }

    @Test func cancelAllRetiresEveryWaitingTaskWithoutRunningIt() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("cancel-all", width: 1)
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        for index in 0..<100 { try submitTracked(queue, RegistryItem(probe, .plain, index)) }
        #expect(op_queue_cancel_all(queue) == 0)
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the cancelled tasks were not retired")
        #expect(probe.ran.load(ordering: .relaxed) == 0, "a cancelled task ran")
        #expect(probe.released.load(ordering: .relaxed) == 100)
    }

    /// op_queue_cancel_all on a queue that does not track its tasks (or on NULL) fails with
    /// EINVAL and cancels nothing: the 8 waiting tasks all run. It used to return nothing and do
    /// nothing, so a caller could not tell that 0 of 8 were cancelled.
    @Test func cancelAllWithoutTrackingFailsWithEINVALAndCancelsNothing() throws {
        let counters = Counters()
        let queue = try makeQueue("cancel-all-untracked", width: 1)
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        var tasks: [OpaquePointer] = []
        defer { tasks.forEach { op_task_release($0) } }
        for _ in 0..<8 {
            let task = try makeTask(countRun, contextPointer(counters))
            #expect(op_queue_submit(queue, task) == 0)
            tasks.append(task)
        }
        #expect(op_queue_cancel_all(queue) == EINVAL, "cancel-all on a queue without tracking")
        #expect(op_queue_cancel_all(nil) == EINVAL, "cancel-all on NULL")
        #expect(tasks.filter { op_task_is_cancelled($0) }.isEmpty, "a task was cancelled")
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not drain")
        #expect(counters.ran.load(ordering: .relaxed) == 8, "every task runs: none was cancelled")
    }

    @Test func aBarrierWaitsForEarlierTasksAndHoldsBackLaterOnes() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("barrier")
        defer { op_queue_release(queue) }
        let before = 500, after = 500
        probe.beforeExpected.store(before, ordering: .releasing)
        for index in 0..<before { try submitTracked(queue, RegistryItem(probe, .before, index)) }
        try submitTracked(queue, RegistryItem(probe, .barrier), barrier: true)
        for index in 0..<after { try submitTracked(queue, RegistryItem(probe, .after, index)) }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not drain")
        #expect(probe.violations.load(ordering: .relaxed) == 0, "a task crossed the barrier")
        #expect(probe.ran.load(ordering: .relaxed) == before + after + 1)
        #expect(listedIndices(queue).isEmpty)
    }

    @Test func aCancelledBarrierNeverRunsAndLaterTasksStillRun() throws {
        let probe = RegistryProbe()
        let queue = try makeTrackedQueue("cancelled-barrier")
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        try submitTracked(queue, RegistryItem(probe, .plain))
        try submitTracked(queue, RegistryItem(probe, .barrier), barrier: true)
        #expect(op_queue_cancel_all(queue) == 0)
        for index in 0..<10 { try submitTracked(queue, RegistryItem(probe, .plain, index)) }
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not drain")
        let barrierRan = probe.barrierRan.load(ordering: .acquiring)
        #expect(!barrierRan, "the cancelled barrier's body ran")
        #expect(probe.ran.load(ordering: .relaxed) == 10, "only the tasks added after cancel-all run")
    }

    /// Two threads submit while barriers are added: every task is on one side of each barrier.
    @Test func barriersHoldUnderConcurrentSubmitters() throws {
        let seed = testSeed()
        var generator = SeededGenerator(seed: seed)
        let rounds = scaled(40, tsan: 10)
        for round in 0..<rounds {
            let probe = RegistryProbe()
            let queue = try makeTrackedQueue("barrier-stress")
            defer { op_queue_release(queue) }
            let perThread = Int.random(in: 50...300, using: &generator)
            // Thread 0 submits `.plain` tasks while thread 1 submits its `.before` tasks, the
            // barrier, then its `.after` tasks: every task must fall on one side of it.
            probe.beforeExpected.store(perThread, ordering: .releasing)
            let shared = SendablePointer(queue)
            let finished = runThreads(2) { index in
                if index == 0 {
                    for item in 0..<perThread { try? submitTracked(shared.raw, RegistryItem(probe, .plain, item)) }
                } else {
                    for item in 0..<perThread { try? submitTracked(shared.raw, RegistryItem(probe, .before, item)) }
                    try? submitTracked(shared.raw, RegistryItem(probe, .barrier), barrier: true)
                    for item in 0..<perThread { try? submitTracked(shared.raw, RegistryItem(probe, .after, item)) }
                }
            }
            #expect(finished, "seed \(seed) round \(round): the submitting threads did not finish")
            #expect(op_queue_wait(queue, Limits.waitNs) == 0, "seed \(seed) round \(round): the queue did not drain")
            #expect(probe.violations.load(ordering: .relaxed) == 0,
                    "seed \(seed) round \(round): a task crossed the barrier (replay with OPERATIONS_TEST_SEED=\(seed))")
            #expect(probe.ran.load(ordering: .relaxed) == 3 * perThread + 1, "seed \(seed) round \(round)")
            #expect(probe.released.load(ordering: .relaxed) == 3 * perThread + 1, "seed \(seed) round \(round)")
        }
    }

    /// Three threads each submit runs of tasks, each run closed by a barrier, to one running
    /// queue. Every barrier runs after everything its thread submitted before it and before
    /// everything it submitted after it, and the queue drains: no cycle. (A barrier used to
    /// register after dropping the registry lock and renumber itself; a task that had read the
    /// old number could close a cycle with the next barrier, and TSan saw the rewrite race.)
    @Test func barriersFromSeveralThreadsKeepEachThreadsOrderAndNeverWaitInACycle() throws {
        let seed = testSeed()
        var generator = SeededGenerator(seed: seed)
        let rounds = scaled(20, tsan: 5)
        for round in 0..<rounds {
            let queue = try makeQueue("barrier-threads")
            defer { op_queue_release(queue) }
            #expect(op_queue_set_tracking(queue, releaseTicketItem) == 0)
            let clock = TicketClock()
            let threads = 3
            // Per thread: what it submits, in order (true: a barrier).
            let plans: [[Bool]] = (0..<threads).map { _ in
                var plan: [Bool] = []
                for _ in 0..<Int.random(in: 10...30, using: &generator) {
                    plan += Array(repeating: false, count: Int.random(in: 0...6, using: &generator)) + [true]
                }
                return plan
            }
            let items: [[TicketItem]] = plans.map { plan in plan.map { _ in TicketItem(clock: clock) } }
            let shared = SendablePointer(queue)
            let failures = Atomic<Int>(0)
            let finished = runThreads(threads) { index in
                for (position, isBarrier) in plans[index].enumerated() {
                    let context = Unmanaged.passRetained(items[index][position]).toOpaque()
                    guard let task = op_task_create(ticketBody, context, nil) else {
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                    let rc = isBarrier ? op_queue_submit_barrier(shared.raw, task) : op_queue_submit(shared.raw, task)
                    if rc != 0 { failures.add(1, ordering: .relaxed) }
                    op_task_release(task)
                }
            }
            let context = "seed \(seed) round \(round) (replay with OPERATIONS_TEST_SEED=\(seed))"
            #expect(finished, "\(context): the submitting threads did not finish")
            #expect(failures.load(ordering: .relaxed) == 0, "\(context): a create or submit failed")
            try #require(op_queue_wait(queue, Limits.waitNs) == 0,
                         "\(context): the queue did not drain (barriers waiting in a cycle?)")
            for (thread, plan) in plans.enumerated() {
                let tickets = items[thread].map { $0.ticket.load(ordering: .acquiring) }
                #expect(!tickets.contains(-1), "\(context): thread \(thread): a task never ran")
                for (position, isBarrier) in plan.enumerated() where isBarrier {
                    let before = tickets[..<position].max() ?? -1
                    let after = tickets[(position + 1)...].min() ?? Int.max
                    #expect(before < tickets[position] && tickets[position] < after,
                            "\(context): thread \(thread): barrier at \(position) ran at \(tickets[position]), before it up to \(before), after it from \(after)")
                }
            }
            // op_queue_wait compacted the registry: every context was handed back.
            let unreleased = items.joined().filter { !$0.released.load(ordering: .acquiring) }.count
            #expect(unreleased == 0, "\(context): \(unreleased) contexts were not released")
        }
    }
}
