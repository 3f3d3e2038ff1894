// QueueTests.swift — op_queue_*: width, suspension, priority bands, submission errors, waits,
// lifetime of a released busy queue, manual completion, and the current-queue/task accessors.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// A log of values in the order bodies appended them.
private final class OrderLog: Sendable {
    private let values = Locked<[Int]>([])
    func append(_ value: Int) { values.withLock { $0.append(value) } }
    var snapshot: [Int] { values.withLock { $0 } }
}

/// Context of one task that logs its value.
private final class LoggedValue: Sendable {
    let log: OrderLog
    let value: Int
    init(log: OrderLog, value: Int) {
        self.log = log
        self.value = value
    }
}

private let logValueBody: TaskBody = { context in
    let item = contextObject(context, as: LoggedValue.self)
    item.log.append(item.value)
}

/// State of the gate-controlled and manual-completion tests.
private final class Gated: Sendable {
    let started = Latch()
    let gate = Latch()
    let bodyReturning = Latch()
    let ran = Atomic<Int>(0)
    let ticket = Atomic<Int>(0)
    let specialTicket = Atomic<Int>(-1)
    let finished = Atomic<Int>(0)
    let rc = Atomic<Int32>(-1)
    let rc2 = Atomic<Int32>(-1)
    let currentQueue = Atomic<Int>(0)
    let currentTask = Atomic<Int>(0)
    let tid = Atomic<Int32>(0)
    init() {}
}

/// Signals `started`, then waits (bounded) for `gate`.
private let blockerBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.started.arrive()
    gated.gate.wait()
}

/// Takes a start ticket.
private let ticketBody: TaskBody = { context in
    contextObject(context, as: Gated.self).ticket.add(1, ordering: .relaxed)
}

/// Takes a start ticket and remembers it as the special one.
private let specialTicketBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.specialTicket.store(gated.ticket.add(1, ordering: .relaxed).oldValue, ordering: .relaxed)
}

private let gatedRanBody: TaskBody = { context in
    contextObject(context, as: Gated.self).ran.add(1, ordering: .relaxed)
}

private let gatedFinished: TaskBody = { context in
    contextObject(context, as: Gated.self).finished.add(1, ordering: .relaxed)
}

/// Records what the accessors return inside a body.
private let recordCurrentBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.currentQueue.store(Int(bitPattern: op_queue_current()), ordering: .relaxed)
    gated.currentTask.store(Int(bitPattern: op_task_current()), ordering: .relaxed)
    gated.tid.store(currentThreadID(), ordering: .relaxed)
}

/// Waits on its own queue and on itself from inside the body.
private let selfWaitBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.rc.store(op_queue_wait(op_queue_current(), 0), ordering: .relaxed)
    gated.rc2.store(op_task_wait(op_task_current(), 0), ordering: .relaxed)
}

/// A manual-completion body: signals that it is returning, without completing.
private let asyncStartBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.ran.add(1, ordering: .relaxed)
    gated.bodyReturning.open()
}

/// A manual-completion body that completes itself before returning.
private let completesItselfBody: TaskBody = { context in
    let gated = contextObject(context, as: Gated.self)
    gated.ran.add(1, ordering: .relaxed)
    gated.rc.store(op_task_complete(op_task_current()), ordering: .relaxed)
}

/// A body that submits the next link of a chain to its own queue until `remaining` runs out:
/// op_queue_wait must cover tasks added while it waits.
private final class Resubmitter: Sendable {
    let remaining: Atomic<Int>
    let ran = Atomic<Int>(0)
    init(count: Int) { remaining = Atomic(count) }
}

private let resubmitBody: TaskBody = { context in
    let state = contextObject(context, as: Resubmitter.self)
    state.ran.add(1, ordering: .relaxed)
    if state.remaining.subtract(1, ordering: .relaxed).newValue > 0 {
        sleepNs(100_000)  // so the waiter really waits across the hand-over
        if op_queue_submit_f(op_queue_current(), resubmitBody, context) != 0 { state.ran.store(-1_000_000, ordering: .relaxed) }
    }
}

/// Per-thread state of the burst test: which round's wait timed out first.
private final class BurstState: Sendable {
    let failedRound = Atomic<Int>(-1)
    let failedThread = Atomic<Int>(-1)
    let ran = Atomic<Int>(0)
    init() {}
}

private let burstBody: TaskBody = { context in
    contextObject(context, as: BurstState.self).ran.add(1, ordering: .relaxed)
}

private final class CompletionResult: Sendable {
    let rc = Atomic<Int32>(-1)
    init() {}
}

private func expectDrained(_ queue: OpaquePointer, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let rc = op_queue_wait(queue, Limits.waitNs)
    #expect(rc == 0, "\(what) did not drain within \(Limits.waitSeconds) s: \(errnoName(rc))", sourceLocation: sourceLocation)
}

/// As expectDrained, polling: a wait that sleeps raises the queue to this thread's class (QoS
/// promotion), which a test of which class's workers run the queue must not do.
private func expectDrainedByPolling(_ queue: OpaquePointer, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let start = monotonicNs()
    while op_queue_unfinished(queue) != 0 && monotonicNs() - start < Limits.waitNs { sleepNs(100_000) }
    #expect(op_queue_unfinished(queue) == 0, "\(what) did not drain within \(Limits.waitSeconds) s", sourceLocation: sourceLocation)
}

private func expectFinished(_ task: OpaquePointer, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let rc = op_task_wait(task, Limits.waitNs)
    #expect(rc == 0, "\(what) did not finish within \(Limits.waitSeconds) s: \(errnoName(rc))", sourceLocation: sourceLocation)
}

// Serialized: several tests occupy every worker of the default class at once (blocking bodies
// behind a gate) and would starve each other if they ran side by side.
@Suite(.needsQuietProcess, .serialized)
struct QueueTests {
    /// op_task_is_on_queue compares the queue a task was submitted to (the Swift layer's
    /// promotion skips dependencies on the queue it adds to with it).
    @Test func aTaskIsOnTheQueueItWasSubmittedToOnly() throws {
        let queue = try makeQueue("on-queue")
        defer { op_queue_release(queue) }
        let other = try makeQueue("on-other-queue")
        defer { op_queue_release(other) }
        let task = try makeTask(emptyBody, nil)
        defer { op_task_release(task) }
        #expect(!op_task_is_on_queue(task, queue), "not submitted yet")
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_task_is_on_queue(task, queue))
        #expect(!op_task_is_on_queue(task, other))
        #expect(!op_task_is_on_queue(task, nil) && !op_task_is_on_queue(nil, queue))
        #expect(op_task_wait(task, Limits.waitNs) == 0)
        #expect(op_task_is_on_queue(task, queue), "still its queue once finished")
    }

    @Test func serialQueueNeverRunsTwoBodiesAtOnce() throws {
        let count = scaled(20_000, tsan: 10_000)
        let counters = Counters()
        let context = contextPointer(counters)
        let queue = try makeQueue("serial", width: 1)
        defer { op_queue_release(queue) }
        #expect(op_queue_width(queue) == 1)
        for _ in 0..<count { #expect(op_queue_submit_f(queue, countConcurrentRun, context) == 0) }
        expectDrained(queue, "serial queue")
        #expect(counters.ran.load(ordering: .relaxed) == count)
        #expect(counters.maxRunning.load(ordering: .relaxed) == 1,
                "a width-1 queue ran \(counters.maxRunning.load(ordering: .relaxed)) bodies at once")
    }

    @Test func widthTwoRunsTwoAtOnceButNeverMore() throws {
        let count = scaled(10_000, tsan: 5_000)
        let queue = try makeQueue("width-2", width: 2)
        defer { op_queue_release(queue) }
        if currentTopology().cpu_count >= 2 {
            // Two bodies that wait for each other: both must be running at the same time.
            let rendezvous = Rendezvous(parties: 2)
            let context = contextPointer(rendezvous)
            for _ in 0..<2 { #expect(op_queue_submit_f(queue, rendezvousBody, context) == 0) }
            expectDrained(queue, "width-2 rendezvous")
            #expect(rendezvous.missed.load(ordering: .relaxed) == 0, "a width-2 queue did not run two bodies at once")
        }
        let counters = Counters()
        let context = contextPointer(counters)
        for _ in 0..<count { #expect(op_queue_submit_f(queue, countConcurrentRun, context) == 0) }
        expectDrained(queue, "width-2 queue")
        #expect(counters.ran.load(ordering: .relaxed) == count)
        #expect(counters.maxRunning.load(ordering: .relaxed) <= 2,
                "a width-2 queue ran \(counters.maxRunning.load(ordering: .relaxed)) bodies at once")
    }

    @Test func widthZeroRunsNothingUntilRaised() throws {
        let counters = Counters()
        let context = contextPointer(counters)
        let queue = try makeQueue("width-0", width: 0)
        defer { op_queue_release(queue) }
        for _ in 0..<100 { #expect(op_queue_submit_f(queue, countRun, context) == 0) }
        sleepNs(Limits.quietNs)
        #expect(counters.ran.load(ordering: .relaxed) == 0, "a width-0 queue started tasks")
        #expect(op_queue_unfinished(queue) == 100)
        #expect(op_queue_set_width(queue, 1) == 0)
        expectDrained(queue, "queue after raising its width")
        #expect(counters.ran.load(ordering: .relaxed) == 100)

        #expect(op_queue_set_width(queue, -2) == EINVAL)
        #expect(op_queue_width(queue) == 1)
        #expect(op_queue_set_width(queue, OP_WIDTH_DEFAULT) == 0)
        #expect(op_queue_width(queue) == OP_WIDTH_DEFAULT)
        errno = 0
        #expect(op_queue_create("bad", OP_QOS_DEFAULT, -2) == nil)
        #expect(errno == EINVAL)
    }

    @Test func suspensionHoldsTasksAndResumeRunsThemAll() throws {
        let counters = Counters()
        let context = contextPointer(counters)
        let queue = try makeQueue("suspended")
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        #expect(op_queue_is_suspended(queue))
        for _ in 0..<1000 { #expect(op_queue_submit_f(queue, countRun, context) == 0) }
        sleepNs(Limits.quietNs)
        #expect(counters.ran.load(ordering: .relaxed) == 0, "tasks ran on a suspended queue")
        #expect(op_queue_unfinished(queue) == 1000)
        op_queue_set_suspended(queue, false)
        #expect(!op_queue_is_suspended(queue))
        expectDrained(queue, "resumed queue")
        #expect(counters.ran.load(ordering: .relaxed) == 1000)
        #expect(op_queue_unfinished(queue) == 0)
    }

    /// Regression: a worker still holding the queue's slot (it just ran a task and lingers for
    /// more) must not start a task submitted after `op_queue_set_suspended(true)` returned.
    @Test func aTaskSubmittedRightAfterSuspendingNeverStartsWhileSuspended() throws {
        let counters = Counters()
        let context = contextPointer(counters)
        let queue = try makeQueue("suspend-race")
        defer { op_queue_release(queue) }
        let rounds = scaled(300, tsan: 100)
        for round in 0..<rounds {
            let before = counters.ran.load(ordering: .relaxed)
            #expect(op_queue_submit_f(queue, countRun, context) == 0)  // keeps a worker on the queue
            op_queue_set_suspended(queue, true)
            #expect(op_queue_submit_f(queue, countRun, context) == 0)
            sleepNs(200_000)
            // The first task may have started before the suspension; the second must not start.
            let ran = counters.ran.load(ordering: .relaxed)
            #expect(ran <= before + 1, "round \(round): a task submitted after suspension started")
            op_queue_set_suspended(queue, false)
            try #require(op_queue_wait(queue, Limits.waitNs) == 0, "round \(round): the resumed queue did not drain")
            #expect(counters.ran.load(ordering: .relaxed) == before + 2)
        }
    }

    @Test func suspendingLetsTheRunningBodyFinishButStartsNothingNew() throws {
        let gated = Gated()
        let context = contextPointer(gated)
        let queue = try makeQueue("suspend-while-running", width: 1)
        defer { op_queue_release(queue) }
        let blocker = try makeTask(blockerBody, context)
        defer { op_task_release(blocker) }
        #expect(op_queue_submit(queue, blocker) == 0)
        for _ in 0..<10 { #expect(op_queue_submit_f(queue, gatedRanBody, context) == 0) }
        guard gated.started.wait() else {
            Issue.record("the first task did not start")
            gated.gate.open()
            return
        }
        op_queue_set_suspended(queue, true)
        gated.gate.open()
        expectFinished(blocker, "the running task of a suspended queue")
        sleepNs(Limits.quietNs)
        #expect(gated.ran.load(ordering: .relaxed) == 0, "a task started after the queue was suspended")
        op_queue_set_suspended(queue, false)
        expectDrained(queue, "resumed queue")
        #expect(gated.ran.load(ordering: .relaxed) == 10)
    }

    @Test func serialQueueRunsReadyTasksByPriorityBandThenFIFO() throws {
        let log = OrderLog()
        let queue = try makeQueue("priority-serial", width: 1)
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        let bands: [op_priority_t] = [OP_PRIORITY_VERY_LOW, OP_PRIORITY_LOW, OP_PRIORITY_NORMAL, OP_PRIORITY_HIGH, OP_PRIORITY_VERY_HIGH]
        for index in 0..<5 {
            for band in bands {
                let value = Int(band.rawValue) * 10 + index
                let task = try makeTask(logValueBody, contextPointer(LoggedValue(log: log, value: value)), priority: band)
                #expect(op_queue_submit(queue, task) == 0)
                op_task_release(task)
            }
        }
        op_queue_set_suspended(queue, false)
        expectDrained(queue, "priority queue")
        let expected = [4, 3, 2, 1, 0].flatMap { band in (0..<5).map { band * 10 + $0 } }
        #expect(log.snapshot == expected, "run order by band (veryHigh first), FIFO within a band")
    }

    @Test func veryHighTaskOvertakesAThousandWaitingNormalTasksAtFullWidth() throws {
        // The default width: one per worker, or the container's CPU limit when lower.
        let workers = Int(currentTopology().default_width)
        let gated = Gated()
        let context = contextPointer(gated)
        let queue = try makeQueue("priority-wide")  // default width
        defer { op_queue_release(queue) }
        // Occupy every slot (and every worker of the class) with a body that waits for the gate.
        for _ in 0..<workers { #expect(op_queue_submit_f(queue, blockerBody, context) == 0) }
        guard gated.started.wait(for: workers) else {
            Issue.record("only \(gated.started.arrivals) of \(workers) blocking bodies started")
            gated.gate.open()
            return
        }
        // Suspended while the 1001 are submitted: the blockers wait where the core cannot see, so
        // a submit loop that outlasts the blocked-worker monitor's tick (ASan and race windows
        // under load: the veryHigh task started as number 10 or later, 1 run in 40) had their
        // slots lent, and the normal tasks ahead started before the veryHigh one was even added.
        op_queue_set_suspended(queue, true)
        for _ in 0..<1000 { #expect(op_queue_submit_f(queue, ticketBody, context) == 0) }
        let special = try makeTask(specialTicketBody, context, priority: OP_PRIORITY_VERY_HIGH)
        defer { op_task_release(special) }
        #expect(op_queue_submit(queue, special) == 0)
        op_queue_set_suspended(queue, false)
        gated.gate.open()
        expectDrained(queue, "wide priority queue")
        let position = gated.specialTicket.load(ordering: .relaxed)
        #expect(gated.ticket.load(ordering: .relaxed) == 1001)
        #expect(position >= 0 && position < 10,
                "the veryHigh task started as number \(position) of 1001 (must be among the first few)")
    }

    @Test func reBandingAWaitingTaskMovesItToTheBackOfItsNewBand() throws {
        let log = OrderLog()
        let queue = try makeQueue("reband", width: 1)
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        let bands = [OP_PRIORITY_NORMAL, OP_PRIORITY_HIGH, OP_PRIORITY_HIGH, OP_PRIORITY_NORMAL]
        var tasks: [OpaquePointer] = []
        var items: [LoggedValue] = []
        for (value, band) in bands.enumerated() {
            let item = LoggedValue(log: log, value: value)
            items.append(item)
            let task = try makeTask(logValueBody, contextPointer(item), priority: band)
            tasks.append(task)
            #expect(op_queue_submit(queue, task) == 0)
        }
        defer { tasks.forEach { op_task_release($0) } }
        #expect(op_task_set_priority(tasks[0], OP_PRIORITY_HIGH) == 0)
        #expect(op_task_set_priority(tasks[2], OP_PRIORITY_LOW) == 0)
        #expect(op_task_priority(tasks[2]) == OP_PRIORITY_LOW)
        op_queue_set_suspended(queue, false)
        expectDrained(queue, "re-banded queue")
        withExtendedLifetime(items) {}
        #expect(log.snapshot == [1, 0, 3, 2], "B, then A moved behind it, D, then C moved to low")
    }

    @Test func reBandingRacingWithWorkersRunsEveryTaskExactlyOnce() throws {
        var random = SeededGenerator("reBandingRacingWithWorkersRunsEveryTaskExactlyOnce")
        let counters = Counters()
        let queue = try makeQueue("reband-race")
        defer { op_queue_release(queue) }
        let count = 2000
        var tasks: [OpaquePointer] = []
        for _ in 0..<count { tasks.append(try makeTask(countRun, contextPointer(counters))) }
        defer { tasks.forEach { op_task_release($0) } }
        // Submit while re-banding random tasks, submitted or not, waiting or running.
        for index in 0..<count {
            #expect(op_queue_submit(queue, tasks[index]) == 0)
            for _ in 0..<3 {
                let target = tasks[Int.random(in: 0...index, using: &random)]
                op_task_set_priority(target, op_priority_t(UInt32.random(in: 0..<5, using: &random)))
            }
        }
        expectDrained(queue, "re-band race queue")
        #expect(counters.ran.load(ordering: .relaxed) == count, "seed \(random.seed): every task ran exactly once")
    }

    @Test func misusedCallsReturnTheirErrors() throws {
        let queue = try makeQueue("errors")
        defer { op_queue_release(queue) }
        let task = try makeTask(emptyBody, nil)
        defer { op_task_release(task) }
        // A barrier needs a tracking queue (one that lists its tasks).
        #expect(op_queue_submit_barrier(queue, task) == EINVAL, "barrier on a non-tracking queue")
        // Deferring is for a task's own body only.
        #expect(op_task_defer(task) == EINVAL, "op_task_defer outside the task's body")
        // Bands and classes out of range.
        #expect(op_task_set_priority(task, op_priority_t(UInt32(OP_PRIORITY_COUNT))) == EINVAL)
        #expect(op_task_set_qos(task, Int32(OP_QOS_COUNT)) == EINVAL)
        #expect(op_task_set_qos(task, OP_QOS_INHERIT - 1) == EINVAL)
        // A hold cannot hold back a task that is already ready.
        let ready = try makeTask(emptyBody, nil)
        defer { op_task_release(ready) }
        op_queue_set_suspended(queue, true)
        #expect(op_queue_submit(queue, ready) == 0)
        #expect(op_task_hold(ready) == EALREADY, "op_task_hold on a queued, ready task")
        op_queue_set_suspended(queue, false)
        expectDrained(queue, "errors queue")
    }

    @Test func submittingATaskTwiceIsEBUSY() throws {
        let queue = try makeQueue("ebusy")
        let other = try makeQueue("ebusy-other")
        defer { op_queue_release(queue); op_queue_release(other) }
        op_queue_set_suspended(queue, true)
        let task = try makeTask(emptyBody, nil)
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_queue_submit(queue, task) == EBUSY, "submitted twice to the same queue")
        #expect(op_queue_submit(other, task) == EBUSY, "submitted to a second queue")
        op_queue_set_suspended(queue, false)
        expectFinished(task, "the task")
        #expect(op_queue_submit(other, task) == EBUSY, "a finished task was accepted")
        #expect(op_queue_submit(nil, task) == EINVAL)
        #expect(op_queue_submit(queue, nil) == EINVAL)
        #expect(op_queue_submit_f(queue, nil, nil) == EINVAL)
    }

    @Test func submitBatchWithADuplicateOrATakenTaskSubmitsNothing() throws {
        let gated = Gated()
        let context = contextPointer(gated)
        let queue = try makeQueue("batch")
        defer { op_queue_release(queue) }
        let a = try makeTask(gatedRanBody, context)
        let b = try makeTask(gatedRanBody, context)
        let taken = try makeTask(gatedRanBody, context)
        defer { [a, b, taken].forEach { op_task_release($0) } }

        #expect(submitBatch(queue, [a, b, a]) == EBUSY, "a batch with a duplicate was accepted")
        #expect(op_queue_unfinished(queue) == 0, "a rejected batch submitted tasks")
        #expect(op_queue_submit(queue, taken) == 0)
        #expect(submitBatch(queue, [a, taken, b]) == EBUSY, "a batch with an already submitted task was accepted")
        expectDrained(queue, "queue after rejected batches")
        #expect(gated.ran.load(ordering: .relaxed) == 1, "only the separately submitted task may have run")
        #expect(!op_task_is_finished(a) && !op_task_is_finished(b))
        let optionalNil: [OpaquePointer?] = [a, nil]
        #expect(optionalNil.withUnsafeBufferPointer { op_queue_submit_batch(queue, $0.baseAddress, 2) } == EINVAL)
        #expect(op_queue_submit_batch(queue, nil, 0) == 0)

        // The rejected tasks are intact: the same tasks go through as a good batch.
        #expect(submitBatch(queue, [a, b]) == 0)
        expectDrained(queue, "queue after a good batch")
        #expect(gated.ran.load(ordering: .relaxed) == 3)
        #expect(op_task_is_finished(a) && op_task_is_finished(b))
    }

    @Test func waitsReportDeadlockAndTimeout() throws {
        let gated = Gated()
        let queue = try makeQueue("waits")
        defer { op_queue_release(queue) }
        let task = try makeTask(selfWaitBody, contextPointer(gated))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        expectFinished(task, "the self-waiting task")
        let queueRC = gated.rc.load(ordering: .relaxed)
        let taskRC = gated.rc2.load(ordering: .relaxed)
        #expect(queueRC == EDEADLK, "op_queue_wait on its own queue from a body returned \(errnoName(queueRC))")
        #expect(taskRC == EDEADLK, "op_task_wait on itself from its body returned \(errnoName(taskRC))")

        op_queue_set_suspended(queue, true)
        let pending = try makeTask(emptyBody, nil)
        defer { op_task_release(pending) }
        #expect(op_queue_submit(queue, pending) == 0)
        let start = monotonicNs()
        #expect(op_queue_wait(queue, 50_000_000) == ETIMEDOUT, "waiting on a suspended queue with work")
        #expect(monotonicNs() - start >= 50_000_000)
        #expect(op_task_wait(pending, 10_000_000) == ETIMEDOUT)
        op_queue_set_suspended(queue, false)
        expectDrained(queue, "resumed queue")
        #expect(op_task_wait(pending, 0) == 0)
        #expect(op_queue_wait(queue, 0) == 0)
        #expect(op_queue_wait(nil, 0) == EINVAL)
        #expect(op_task_wait(nil, 0) == EINVAL)
    }

    @Test func aReleasedBusyQueueStillRunsAllItsTasks() throws {
        let count = scaled(10_000, tsan: 5_000)
        let counters = Counters()
        counters.finishTarget.store(count, ordering: .releasing)
        let context = contextPointer(counters)
        let queue = try makeQueue("released-busy")
        var last: OpaquePointer?
        for index in 0..<count {
            let task = try makeTask(countRun, context, onFinish: countFinish)
            #expect(op_queue_submit(queue, task) == 0)
            if index == count - 1 { last = task } else { op_task_release(task) }
        }
        op_queue_release(queue)  // the last handle, with up to `count` tasks unfinished
        let lastTask = try #require(last)
        expectFinished(lastTask, "the last task of a released queue")
        op_task_release(lastTask)
        #expect(counters.allFinished.wait(),
                "only \(counters.finished.load(ordering: .relaxed)) of \(count) tasks of a released queue finished")
        #expect(counters.ran.load(ordering: .relaxed) == count)
    }

    @Test func manualCompletionHoldsTheSlotAndTheDependentsUntilCompleted() throws {
        let gated = Gated()
        let context = contextPointer(gated)
        let next = Gated()
        let dependentState = Gated()
        let queue = try makeQueue("manual", width: 1)
        let otherQueue = try makeQueue("manual-dependent")
        defer { op_queue_release(queue); op_queue_release(otherQueue) }
        let task = try makeTask(asyncStartBody, context, flags: UInt32(OP_TASK_MANUAL_COMPLETION), onFinish: gatedFinished)
        let following = try makeTask(gatedRanBody, contextPointer(next))
        let dependent = try makeTask(gatedRanBody, contextPointer(dependentState))
        defer { [task, following, dependent].forEach { op_task_release($0) } }
        #expect(op_task_add_dependency(dependent, task) == 0)
        #expect(op_queue_submit(otherQueue, dependent) == 0)
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_queue_submit(queue, following) == 0)

        try #require(gated.bodyReturning.wait(), "the manual-completion body did not run")
        sleepNs(Limits.quietNs)
        #expect(!op_task_is_finished(task), "finished when its body returned")
        #expect(op_task_is_executing(task), "a manual-completion task is executing until completed")
        #expect(next.ran.load(ordering: .relaxed) == 0, "the next task of a width-1 queue started before completion")
        #expect(dependentState.ran.load(ordering: .relaxed) == 0, "a dependent ran before completion")
        #expect(gated.finished.load(ordering: .relaxed) == 0)
        #expect(op_task_wait(task, 10_000_000) == ETIMEDOUT)

        // Complete it from another thread.
        let handle = SendablePointer(task)
        let rcBox = CompletionResult()
        #expect(runThreads(1) { _ in rcBox.rc.store(op_task_complete(handle.raw), ordering: .relaxed) })
        #expect(rcBox.rc.load(ordering: .relaxed) == 0, "op_task_complete returned \(errnoName(rcBox.rc.load(ordering: .relaxed)))")
        expectFinished(task, "the completed task")
        expectFinished(following, "the next task of the width-1 queue")
        expectFinished(dependent, "the dependent of the completed task")
        #expect(next.ran.load(ordering: .relaxed) == 1)
        #expect(dependentState.ran.load(ordering: .relaxed) == 1)
        #expect(op_task_complete(task) == EALREADY)
        #expect(gated.finished.load(ordering: .relaxed) == 1, "on_finish calls: \(gated.finished.load(ordering: .relaxed))")
        expectDrained(queue, "manual-completion queue")
        expectDrained(otherQueue, "dependent's queue")
    }

    @Test func manualCompletionTaskMayCompleteItselfInsideItsBody() throws {
        let gated = Gated()
        let next = Gated()
        let queue = try makeQueue("manual-self", width: 1)
        defer { op_queue_release(queue) }
        let task = try makeTask(completesItselfBody, contextPointer(gated), flags: UInt32(OP_TASK_MANUAL_COMPLETION), onFinish: gatedFinished)
        let following = try makeTask(gatedRanBody, contextPointer(next))
        defer { op_task_release(task); op_task_release(following) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_queue_submit(queue, following) == 0)
        expectFinished(task, "a task that completed itself")
        expectFinished(following, "the task after it")
        expectDrained(queue, "queue")
        #expect(gated.rc.load(ordering: .relaxed) == 0, "op_task_complete from its own body returned \(errnoName(gated.rc.load(ordering: .relaxed)))")
        #expect(gated.finished.load(ordering: .relaxed) == 1)
        #expect(next.ran.load(ordering: .relaxed) == 1)
    }

    /// A plain task that is queued cannot be completed by hand; a manual-completion task that is
    /// queued is finished at once and retired by its queue without its body (an asynchronous
    /// operation that finished itself before its queue started it: the queue goes on).
    @Test func completeFinishesQueuedManualTaskWithoutItsBody() throws {
        let queue = try makeQueue("complete-queued", width: 1)
        defer { op_queue_release(queue) }
        op_queue_set_suspended(queue, true)
        let counters = Counters()
        let plain = try makeTask(emptyBody, nil)
        let manual = try makeTask(countRun, contextPointer(counters), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
        let after = try makeTask(emptyBody, nil)
        defer { [plain, manual, after].forEach { op_task_release($0) } }
        #expect(op_queue_submit(queue, plain) == 0)
        #expect(op_queue_submit(queue, manual) == 0)
        #expect(op_queue_submit(queue, after) == 0)
        #expect(op_task_complete(plain) == EBUSY, "completed a queued task")
        #expect(op_task_complete(manual) == 0, "a queued manual task is completed at once")
        #expect(op_task_is_finished(manual))
        #expect(op_task_complete(manual) == EALREADY)
        #expect(op_task_complete(nil) == EINVAL)
        op_queue_set_suspended(queue, false)
        expectFinished(plain, "plain task")
        expectFinished(after, "the task behind the completed one on a width-1 queue")
        expectDrained(queue, "queue")
        #expect(counters.ran.load(ordering: .relaxed) == 0, "the body of a task completed while queued ran")
    }

    /// The same while a dependency still holds it: it finishes at once, its dependents start,
    /// and its queue retires it (gives back its unit) without waiting for the dependency.
    @Test func completeFinishesManualTaskHeldByDependency() throws {
        let queue = try makeQueue("complete-held", width: 1)
        let other = try makeQueue("complete-held-dependency")
        defer { op_queue_release(queue); op_queue_release(other) }
        let gated = Gated()
        let counters = Counters()
        let dependency = try makeTask(blockerBody, contextPointer(gated))
        let manual = try makeTask(countRun, contextPointer(counters), flags: UInt32(OP_TASK_MANUAL_COMPLETION))
        let dependent = try makeTask(emptyBody, nil)
        let after = try makeTask(emptyBody, nil)
        defer { [dependency, manual, dependent, after].forEach { op_task_release($0) } }
        #expect(op_task_add_dependency(manual, dependency) == 0)
        #expect(op_task_add_dependency(dependent, manual) == 0)
        #expect(op_queue_submit(other, dependency) == 0)
        #expect(op_queue_submit(queue, manual) == 0)
        #expect(op_queue_submit(queue, dependent) == 0)
        #expect(op_queue_submit(queue, after) == 0)
        try #require(gated.started.wait(), "the dependency did not start")
        #expect(op_task_complete(manual) == 0)
        expectFinished(dependent, "the dependent of a task completed while held")
        expectFinished(after, "the task behind it on a width-1 queue")
        gated.gate.open()
        expectFinished(dependency, "the dependency")
        expectDrained(queue, "queue")
        expectDrained(other, "the dependency's queue")
        #expect(counters.ran.load(ordering: .relaxed) == 0)
    }

    @Test func completingANeverSubmittedTaskReleasesItsDependents() throws {
        let gated = Gated()
        let dependentState = Gated()
        let queue = try makeQueue("complete-unsubmitted")
        defer { op_queue_release(queue) }
        let task = try makeTask(gatedRanBody, contextPointer(gated), onFinish: gatedFinished)
        let dependent = try makeTask(gatedRanBody, contextPointer(dependentState))
        defer { op_task_release(task); op_task_release(dependent) }
        #expect(op_task_add_dependency(dependent, task) == 0)
        #expect(op_queue_submit(queue, dependent) == 0)
        sleepNs(Limits.quietNs)
        #expect(dependentState.ran.load(ordering: .relaxed) == 0)

        #expect(op_task_complete(task) == 0)
        #expect(op_task_is_finished(task))
        #expect(gated.finished.load(ordering: .relaxed) == 1, "on_finish of a task completed by hand")
        #expect(gated.ran.load(ordering: .relaxed) == 0, "op_task_complete must not call the body")
        expectFinished(dependent, "the dependent of a task completed by hand")
        #expect(dependentState.ran.load(ordering: .relaxed) == 1)
        #expect(op_task_complete(task) == EALREADY)
        #expect(op_queue_submit(queue, task) == EBUSY, "a completed task was accepted by a queue")
        expectDrained(queue, "queue")
    }

    @Test func currentQueueAndTaskInsideABody() throws {
        // All workers up first: the worker table is only complete once they all started
        // (see WorkerStartupTests).
        op_runtime_start_workers(OP_QOS_BACKGROUND)
        let gated = Gated()
        let queue = try makeQueue("current-accessors", qos: OP_QOS_BACKGROUND)
        defer { op_queue_release(queue) }
        #expect(op_queue_label(queue).map { String(cString: $0) } == "current-accessors")
        #expect(op_queue_qos(queue) == OP_QOS_BACKGROUND)
        let task = try makeTask(recordCurrentBody, contextPointer(gated))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        expectFinished(task, "the task")
        #expect(gated.currentQueue.load(ordering: .relaxed) == Int(bitPattern: queue), "op_queue_current() in a body")
        #expect(gated.currentTask.load(ordering: .relaxed) == Int(bitPattern: task), "op_task_current() in a body")
        #expect(op_task_context(task) != nil)
        #expect(op_queue_current() == nil && op_task_current() == nil, "accessors outside any body")
        // The body ran on a worker of the queue's class.
        let workerTids = workerInfos(OP_QOS_BACKGROUND).map(\.tid)
        #expect(workerTids.contains(gated.tid.load(ordering: .relaxed)),
                "the body ran on tid \(gated.tid.load(ordering: .relaxed)), not on a background worker \(workerTids)")

        #expect(op_queue_set_qos(queue, op_qos_t(rawValue: 9)) == EINVAL)
        #expect(op_queue_qos(queue) == OP_QOS_BACKGROUND)
    }

    /// "op_queue_set_qos: tasks submitted afterwards are handed to that class's workers."
    /// First on an idle queue, then while a task of the (serial) queue is still running on a
    /// worker of the old class: that worker must not take the new task along.
    @Test func tasksSubmittedAfterSetQoSRunOnTheNewClassWorkers() throws {
        op_runtime_start_workers(OP_QOS_BACKGROUND)
        op_runtime_start_workers(OP_QOS_UTILITY)
        let backgroundTids = workerInfos(OP_QOS_BACKGROUND).map(\.tid)
        let utilityTids = workerInfos(OP_QOS_UTILITY).map(\.tid)

        // Idle queue: first task on background, drained, then utility.
        let idle = try makeQueue("set-qos-idle", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(idle) }
        let before = Gated()
        #expect(op_queue_submit_f(idle, recordCurrentBody, contextPointer(before)) == 0)
        expectDrainedByPolling(idle, "queue before set_qos")
        #expect(backgroundTids.contains(before.tid.load(ordering: .relaxed)),
                "a background queue's task ran on tid \(before.tid.load(ordering: .relaxed)), not on a background worker \(backgroundTids)")
        #expect(op_queue_set_qos(idle, OP_QOS_UTILITY) == 0)
        #expect(op_queue_qos(idle) == OP_QOS_UTILITY)
        let after = Gated()
        #expect(op_queue_submit_f(idle, recordCurrentBody, contextPointer(after)) == 0)
        expectDrainedByPolling(idle, "queue after set_qos")
        #expect(utilityTids.contains(after.tid.load(ordering: .relaxed)),
                "after set_qos(utility) on an idle queue the task ran on tid \(after.tid.load(ordering: .relaxed)), not on a utility worker \(utilityTids)")

        // Busy serial queue: a background worker is running its task when the QoS changes.
        let busy = try makeQueue("set-qos-busy", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(busy) }
        let gated = Gated()
        #expect(op_queue_submit_f(busy, blockerBody, contextPointer(gated)) == 0)
        guard gated.started.wait() else {
            Issue.record("the first task did not start")
            gated.gate.open()
            return
        }
        #expect(op_queue_set_qos(busy, OP_QOS_UTILITY) == 0)
        let moved = Gated()
        #expect(op_queue_submit_f(busy, recordCurrentBody, contextPointer(moved)) == 0)
        gated.gate.open()
        expectDrainedByPolling(busy, "busy queue after set_qos")
        let tid = moved.tid.load(ordering: .relaxed)
        #expect(utilityTids.contains(tid),
                "a task submitted after op_queue_set_qos(utility) ran on tid \(tid)\(backgroundTids.contains(tid) ? ", a background worker" : "") \(backgroundTids), not on a utility worker \(utilityTids): the old class's worker draining the queue took it along")
    }

    @Test func taskCreateRejectsBadAttributes() {
        func rejects(_ what: String, _ adjust: (inout op_task_attr_t) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            var attr = op_task_attr_t()
            op_task_attr_init(&attr)
            adjust(&attr)
            errno = 0
            let task = op_task_create(emptyBody, nil, &attr)
            #expect(task == nil && errno == EINVAL, "op_task_create accepted \(what)", sourceLocation: sourceLocation)
            if let task { op_task_release(task) }
        }
        rejects("priority 5") { $0.priority = op_priority_t(rawValue: 5) }
        rejects("qos 5") { $0.qos = 5 }
        rejects("qos -2") { $0.qos = -2 }
        rejects("thread priority 1.5") { $0.thread_priority = 1.5 }
        rejects("thread priority -0.1") { $0.thread_priority = -0.1 }
        rejects("thread priority NaN") { $0.thread_priority = .nan }
        rejects("an unknown flag") { $0.flags = 1 << 7 }
        errno = 0
        #expect(op_task_create(nil, nil, nil) == nil && errno == EINVAL, "op_task_create accepted a NULL body")

        var attr = op_task_attr_t()
        op_task_attr_init(&attr)
        #expect(attr.priority == OP_PRIORITY_NORMAL && attr.qos == OP_QOS_INHERIT && attr.thread_priority == 0.5
                && attr.flags == 0 && attr.on_finish == nil, "op_task_attr_init defaults")
        let task = op_task_create(emptyBody, nil, nil)  // NULL attributes: the defaults
        #expect(task != nil)
        if let task {
            #expect(op_task_context(task) == nil)
            #expect(!op_task_is_finished(task) && !op_task_is_executing(task) && !op_task_is_cancelled(task))
            op_task_release(task)
        }
    }

    @Test func batchIsQueuedWholeBeforeAnyOfItRuns() throws {
        let log = OrderLog()
        let queue = try makeQueue("batch-order", width: 1)
        defer { op_queue_release(queue) }
        // On an idle serial queue: lowest band first in the array, yet the highest runs first,
        // because nothing starts before the whole batch is in the queue.
        let bands: [op_priority_t] = [OP_PRIORITY_VERY_LOW, OP_PRIORITY_LOW, OP_PRIORITY_NORMAL, OP_PRIORITY_HIGH, OP_PRIORITY_VERY_HIGH]
        let tasks = try bands.map { band in
            try makeTask(logValueBody, contextPointer(LoggedValue(log: log, value: Int(band.rawValue))), priority: band)
        }
        defer { tasks.forEach { op_task_release($0) } }
        #expect(submitBatch(queue, tasks) == 0)
        expectDrained(queue, "batch queue")
        #expect(log.snapshot == [4, 3, 2, 1, 0], "a batch must be queued whole before its first task starts")
    }

    @Test func loweringTheWidthStopsNoRunningTaskAndLimitsLaterOnes() throws {
        guard currentTopology().cpu_count >= 2 else { return }
        let gated = Gated()
        let queue = try makeQueue("narrowed", width: 2)
        defer { op_queue_release(queue) }
        let context = contextPointer(gated)
        for _ in 0..<2 { #expect(op_queue_submit_f(queue, blockerBody, context) == 0) }
        guard gated.started.wait(for: 2) else {
            Issue.record("two blockers did not run at once on a width-2 queue")
            gated.gate.open()
            return
        }
        let counters = Counters()
        for _ in 0..<2_000 { #expect(op_queue_submit_f(queue, countConcurrentRun, contextPointer(counters)) == 0) }
        #expect(op_queue_set_width(queue, 1) == 0)
        gated.gate.open()  // both running bodies finish normally
        expectDrained(queue, "narrowed queue")
        #expect(counters.ran.load(ordering: .relaxed) == 2_000)
        #expect(counters.maxRunning.load(ordering: .relaxed) == 1,
                "after lowering the width to 1, \(counters.maxRunning.load(ordering: .relaxed)) bodies ran at once")
    }

    @Test func queueWaitCoversTasksAddedWhileWaiting() throws {
        let chain = 200
        let state = Resubmitter(count: chain)
        let queue = try makeQueue("resubmitting", width: 1)
        defer { op_queue_release(queue) }
        #expect(op_queue_submit_f(queue, resubmitBody, contextPointer(state)) == 0)
        expectDrained(queue, "a queue whose bodies keep submitting")
        #expect(state.ran.load(ordering: .relaxed) == chain,
                "op_queue_wait returned after \(state.ran.load(ordering: .relaxed)) of \(chain) chained submissions")
    }

    @Test func manyThreadsWaitingOnOneTaskAreAllWoken() throws {
        let gated = Gated()
        let queue = try makeQueue("many-waiters")
        defer { op_queue_release(queue) }
        let task = try makeTask(blockerBody, contextPointer(gated))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        let handle = SendablePointer(task)
        let results = Locked<[Int32]>([])
        let waiting = Latch()
        let joined = runThreads(5) { thread in
            if thread < 4 {
                waiting.arrive()
                let rc = op_task_wait(handle.raw, Limits.waitNs)
                results.withLock { $0.append(rc) }
            } else {
                // Open the gate once every waiter is about to wait (the pause only makes it likely
                // that they are asleep in the futex; correctness does not depend on it).
                if waiting.wait(for: 4) { sleepNs(20_000_000) }
                gated.gate.open()
            }
        }
        #expect(joined, "waiters were not woken within \(Limits.waitSeconds) s")
        #expect(results.withLock { $0 } == [0, 0, 0, 0], "op_task_wait results: \(results.withLock { $0 }.map(errnoName))")
    }

    @Test func aReleasedQueueWhoseTaskWaitsOnADependencyStillRunsIt() throws {
        let gated = Gated()
        let blocked = try makeQueue("dependency-blocked")
        op_queue_set_suspended(blocked, true)
        defer { op_queue_release(blocked) }
        let dependency = try makeTask(emptyBody, nil)
        let task = try makeTask(gatedRanBody, contextPointer(gated), onFinish: gatedFinished)
        defer { op_task_release(dependency); op_task_release(task) }
        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_queue_submit(blocked, dependency) == 0)
        let released = try makeQueue("released-with-waiting-task")
        #expect(op_queue_submit(released, task) == 0)
        op_queue_release(released)  // its only task is still waiting for the dependency
        sleepNs(Limits.quietNs / 2)
        #expect(gated.ran.load(ordering: .relaxed) == 0)
        op_queue_set_suspended(blocked, false)
        expectFinished(task, "the task of a released queue after its dependency finished")
        #expect(gated.ran.load(ordering: .relaxed) == 1)
        #expect(gated.finished.load(ordering: .relaxed) == 1)
    }

    @Test func completingAManualTaskWhileItsBodyRunsReleasesDependentsAtOnce() throws {
        let gated = Gated()
        let next = Gated()
        let dependentState = Gated()
        let queue = try makeQueue("manual-early", width: 1)
        let otherQueue = try makeQueue("manual-early-dependent")
        defer { op_queue_release(queue); op_queue_release(otherQueue) }
        let task = try makeTask(blockerBody, contextPointer(gated), flags: UInt32(OP_TASK_MANUAL_COMPLETION), onFinish: gatedFinished)
        let following = try makeTask(gatedRanBody, contextPointer(next))
        let dependent = try makeTask(gatedRanBody, contextPointer(dependentState))
        defer { [task, following, dependent].forEach { op_task_release($0) } }
        #expect(op_task_add_dependency(dependent, task) == 0)
        #expect(op_queue_submit(otherQueue, dependent) == 0)
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_queue_submit(queue, following) == 0)
        guard gated.started.wait() else {
            Issue.record("the manual-completion body did not start")
            gated.gate.open()
            return
        }
        #expect(op_task_complete(task) == 0, "completing a running manual-completion task")
        #expect(op_task_is_finished(task))
        expectFinished(dependent, "the dependent of a task completed while its body runs")
        #expect(next.ran.load(ordering: .relaxed) == 0, "the next task of the width-1 queue started while the body still runs")
        gated.gate.open()
        expectFinished(following, "the next task after the body returned")
        expectDrained(queue, "queue")
        #expect(gated.finished.load(ordering: .relaxed) == 1)
    }

    /// Submit one task, wait for it, pause a little (so workers park), again and again, from two
    /// threads on two serial queues: a lost wake-up of a parked worker shows up as a wait that
    /// times out.
    @Test func submitWaitInBurstsNeverLosesAWorkerWakeUp() throws {
        let seed = testSeed()
        let rounds = scaled(20_000, tsan: 10_000)
        let start = monotonicNs()
        let state = BurstState()
        _ = contextPointer(state)  // keeps it alive for any late task
        let queues = try (0..<2).map { SendablePointer(try makeQueue("burst-\($0)", width: 1)) }
        defer { queues.forEach { op_queue_release($0.raw) } }
        let joined = runThreads(2, seconds: 120) { thread in
            var generator = SeededGenerator(seed: seed &+ UInt64(thread))
            for round in 0..<rounds {
                let context = Unmanaged.passUnretained(state).toOpaque()
                guard let task = op_task_create(burstBody, context, nil) else { return }
                _ = op_queue_submit(queues[thread].raw, task)
                let rc = op_task_wait(task, 10_000_000_000)
                op_task_release(task)
                if rc != 0 {
                    state.failedRound.store(round, ordering: .relaxed)
                    state.failedThread.store(thread, ordering: .relaxed)
                    return
                }
                switch UInt8.random(in: 0..<8, using: &generator) {
                case 0: sleepNs(Int64.random(in: 10_000...200_000, using: &generator))  // long enough to park
                case 1: sched_yield()
                default: break
                }
            }
        }
        print("[submitWaitInBurstsNeverLosesAWorkerWakeUp] 2 × \(rounds) rounds in \(secondsSince(start)) s")
        try #require(joined, "burst threads did not finish (seed \(seed))")
        #expect(state.failedRound.load(ordering: .relaxed) < 0,
                "thread \(state.failedThread.load(ordering: .relaxed)) waited 10 s for round \(state.failedRound.load(ordering: .relaxed)): lost wake-up (seed \(seed))")
        #expect(state.ran.load(ordering: .relaxed) == 2 * rounds)
    }
}
