// JobAndIdleNoticeTests.swift — op_queue_submit_job (untracked jobs, as Swift's executors
// submit them) and op_queue_notify_idle (the wait that blocks no thread): a job on a tracking
// queue is neither listed, cancelled nor held back by a barrier, but counts against the width,
// waits while suspended and runs at its QoS; a notice runs once, at once on an idle queue, else
// when the last task finishes, in registration order, also when registrations race with finishes.
// The suites share the process with other sharing suites only: their bodies block workers, which
// the suites that need a quiet process (WorkerPoolTests, QueueTests, NiceTests) must not meet.
import Glibc
import OperationsCore
import Synchronization
import Testing

private final class JobProbe: Sendable {
    let ran = Atomic<Int>(0)
    let nice = Atomic<Int32>(99)
    let started = Latch()
    let gate = Latch()
    let notices = Locked<[Int]>([])
    let noticeThreads = Locked<[Int32]>([])
    init() {}
}

private let countBody: TaskBody = { context in
    let probe = contextObject(context, as: JobProbe.self)
    probe.nice.store(op_current_thread_nice(), ordering: .relaxed)
    probe.ran.add(1, ordering: .releasing)
}

private let gatedBody: TaskBody = { context in
    let probe = contextObject(context, as: JobProbe.self)
    probe.started.open()
    probe.gate.wait(for: 1, seconds: Limits.waitSeconds)
}

/// A notice's context: the probe and the notice's number.
private final class Notice: Sendable {
    let probe: JobProbe
    let number: Int
    init(_ probe: JobProbe, _ number: Int) { self.probe = probe; self.number = number }
}

private let noticeBody: TaskBody = { context in
    let notice = Unmanaged<Notice>.fromOpaque(context!).takeRetainedValue()
    notice.probe.notices.withLock { $0.append(notice.number) }
    notice.probe.noticeThreads.withLock { $0.append(op_current_thread_id()) }
}

private let dropContext: TaskBody = { _ in }

/// The slow idle path: a tracking queue's release of a finished context that takes a while (as a
/// compaction releasing thousands does), so work can come while the queue's idle path runs.
private final class SlowIdle: Sendable {
    let releasing = Latch()
    let proceed = Latch()
}
nonisolated(unsafe) private var slowIdleState: SlowIdle?
private let slowRelease: TaskBody = { _ in
    guard let state = slowIdleState else { return }
    state.releasing.open()
    _ = state.proceed.wait(for: 1, seconds: Limits.waitSeconds)
}

/// A job that opens the probe's gate (its context is the probe, kept alive by the test).
private let openGateJob: TaskBody = { context in
    contextObject(context, as: JobProbe.self).gate.open()
}

/// Submits a job to the queue it runs on, then blocks where the core cannot see (a latch)
/// until that job ran: the job must not wait for this body. Records whether it ran in time.
private let submitJobAndBlockBody: TaskBody = { context in
    let probe = contextObject(context, as: JobProbe.self)
    _ = op_queue_submit_job(op_queue_current(), openGateJob, context, OP_QOS_INHERIT)
    if probe.gate.wait(for: 1, seconds: Limits.waitSeconds) { probe.ran.add(1, ordering: .releasing) }
    probe.started.open()
}

@Suite(.sharesProcess, .serialized) struct JobAndIdleNoticeTests {
    @Test func jobsOnATrackingQueueAreNotListedNotCancelledAndNotHeldByBarriers() throws {
        let probe = JobProbe()
        let queue = try makeQueue("tracking-with-jobs", width: 2)
        defer { op_queue_release(queue) }
        #expect(op_queue_set_tracking(queue, dropContext) == 0)
        let blocker = try makeTask(gatedBody, contextPointer(probe))
        defer { op_task_release(blocker) }
        #expect(op_queue_submit(queue, blocker) == 0)
        #expect(probe.started.wait(for: 1, seconds: Limits.waitSeconds), "the blocker did not start")
        let barrier = try makeTask(emptyBody, nil)
        defer { op_task_release(barrier) }
        #expect(op_queue_submit_barrier(queue, barrier) == 0)
        // Behind the barrier a task would wait for the blocker; a job runs in the free slot.
        #expect(op_queue_submit_job(queue, countBody, contextPointer(probe), OP_QOS_INHERIT) == 0)
        #expect(eventually { probe.ran.load(ordering: .acquiring) == 1 }, "a job was held back by a barrier")
        var listed = 0
        withUnsafeMutablePointer(to: &listed) { pointer in
            op_queue_for_each(queue, { _, arg in arg!.assumingMemoryBound(to: Int.self).pointee += 1 }, pointer)
        }
        #expect(listed == 1, "the listing holds \(listed) tasks; only the blocker is tracked")
        probe.gate.open()
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        // Suspended: the job waits; cancel-all does not touch it; it runs on resume.
        op_queue_set_suspended(queue, true)
        #expect(op_queue_submit_job(queue, countBody, contextPointer(probe), OP_QOS_INHERIT) == 0)
        quietPeriod(0.05)
        #expect(probe.ran.load(ordering: .acquiring) == 1, "a job ran on a suspended queue")
        #expect(op_queue_cancel_all(queue) == 0)
        op_queue_set_suspended(queue, false)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(probe.ran.load(ordering: .acquiring) == 2, "cancel-all stopped a job")
    }

    /// A job a body pushes and then blocks on (outside the core's sight) runs on another worker,
    /// on a queue of explicit width and on a default-width one, whether the body is a task or
    /// itself a job (found by review: a job pushed alone into the worker's local run queue drew
    /// no drainer, and on an explicit width nothing else came for it).
    @Test(arguments: [(Int32(2), false), (Int32(2), true), (OP_WIDTH_DEFAULT, false), (OP_WIDTH_DEFAULT, true)])
    func aJobABodyPushesAndBlocksOnIsNeverStranded(width: Int32, bodyIsJob: Bool) throws {
        let queue = try makeQueue("job-then-block", width: width)
        defer { op_queue_release(queue) }
        for round in 0..<20 {
            let probe = JobProbe()
            let context = contextPointer(probe)
            let rc = bodyIsJob ? op_queue_submit_job(queue, submitJobAndBlockBody, context, OP_QOS_INHERIT)
                               : op_queue_submit_f(queue, submitJobAndBlockBody, context)
            #expect(rc == 0)
            #expect(probe.started.wait(for: 1, seconds: Limits.waitSeconds * 2), "round \(round): the body never returned")
            #expect(probe.ran.load(ordering: .acquiring) == 1,
                    "round \(round): the job its body pushed and blocked on never ran (width \(width), body is a job: \(bodyIsJob))")
            if probe.ran.load(ordering: .acquiring) != 1 { break }
        }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }

    @Test func aJobRunsAtItsQoSAndBadArgumentsAreRefused() throws {
        let probe = JobProbe()
        let queue = try makeQueue("job-qos")
        defer { op_queue_release(queue) }
        #expect(op_queue_submit_job(queue, countBody, contextPointer(probe), qosAttr(OP_QOS_BACKGROUND)) == 0)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        let expected = max(op_runtime_nice_for(OP_QOS_BACKGROUND, 0.5), op_runtime_lowest_nice())
        #expect(probe.nice.load(ordering: .relaxed) == expected)
        #expect(op_queue_submit_job(queue, countBody, nil, OP_QOS_INHERIT - 1) == EINVAL)
        #expect(op_queue_submit_job(queue, countBody, nil, Int32(OP_QOS_COUNT)) == EINVAL)
        #expect(op_queue_submit_job(nil, countBody, nil, OP_QOS_INHERIT) == EINVAL)
        #expect(op_queue_submit_job(queue, nil, nil, OP_QOS_INHERIT) == EINVAL)
    }

    @Test func aNoticeRunsAtOnceOnAnIdleQueueElseOnceWhenTheLastTaskFinishesInOrder() throws {
        let probe = JobProbe()
        let queue = try makeQueue("noticed", width: 1)
        defer { op_queue_release(queue) }
        #expect(op_queue_notify_idle(queue, noticeBody, Unmanaged.passRetained(Notice(probe, 0)).toOpaque()) == 0)
        #expect(probe.notices.withLock { $0 } == [0], "a notice on an idle queue did not run at once")
        #expect(probe.noticeThreads.withLock { $0 } == [op_current_thread_id()])
        #expect(op_queue_submit_f(queue, gatedBody, contextPointer(probe)) == 0)
        #expect(probe.started.wait(for: 1, seconds: Limits.waitSeconds))
        for number in 1...3 {
            #expect(op_queue_notify_idle(queue, noticeBody, Unmanaged.passRetained(Notice(probe, number)).toOpaque()) == 0)
        }
        quietPeriod(0.05)
        #expect(probe.notices.withLock { $0 } == [0], "a notice ran while the queue was busy")
        probe.gate.open()
        #expect(eventually { probe.notices.withLock { $0.count } == 4 }, "the notices did not run when the queue went idle")
        quietPeriod(0.05)
        #expect(probe.notices.withLock { $0 } == [0, 1, 2, 3])
        #expect(op_queue_notify_idle(nil, noticeBody, nil) == EINVAL)
    }

    @Test func noticesRacingWithFinishesEachRunOnce() throws {
        let seed = testSeed()
        var generator = SeededGenerator(seed: seed)
        let probe = JobProbe()
        let queue = try makeQueue("noticed-race")
        defer { op_queue_release(queue) }
        let rounds = 2000
        for number in 0..<rounds {
            let tasks = Int.random(in: 0...3, using: &generator)
            for _ in 0..<tasks { #expect(op_queue_submit_f(queue, countBody, contextPointer(probe)) == 0) }
            #expect(op_queue_notify_idle(queue, noticeBody, Unmanaged.passRetained(Notice(probe, number)).toOpaque()) == 0)
        }
        let allRan = eventually(seconds: Limits.waitSeconds) { probe.notices.withLock { $0.count } >= rounds }
        #expect(allRan, "only \(probe.notices.withLock { $0.count }) of \(rounds) notices ran (seed \(seed))")
        quietPeriod(0.05)
        let seen = probe.notices.withLock { $0 }
        #expect(seen.count == rounds && Set(seen).count == rounds, "a notice ran twice or never (seed \(seed))")
    }
}

/// op_queue_set_cpus / op_queue_set_cpu_list / op_queue_set_numa_node / op_queue_cpus: the C
/// API's answers (issue 16); where placed tasks run is checked through the Swift layer
/// (PlacementTests).
@Suite(.sharesProcess) struct PlacementAPITests {
    @Test func placementCallsReturnTheirErrorsAndRefusalsChangeNothing() throws {
        let queue = try makeQueue("placed-c")
        defer { op_queue_release(queue) }
        var set = cpu_set_t()
        #expect(op_queue_cpus(queue, &set) == ENOENT, "an unplaced queue reports a placement")
        var cpu: Int32 = 0, node: Int32 = 0
        #expect(op_runtime_cpu(0, &cpu, &node) == 0)
        var list = [cpu]
        var bad: Int32 = -1
        #expect(op_queue_set_cpu_list(queue, &list, 1, &bad) == 0)
        var placed = [Int32](repeating: -1, count: 4)
        #expect(op_queue_cpu_list(queue, &placed, placed.count) == 1 && placed[0] == cpu)
        #expect(op_queue_cpus(queue, &set) == 0)
        var outside: [Int32] = [cpu, 100_000]
        #expect(op_queue_set_cpu_list(queue, &outside, 2, &bad) == EINVAL)
        #expect(bad == 100_000, "the refused CPU is not named: \(bad)")
        #expect(op_queue_cpu_list(queue, &placed, placed.count) == 1 && placed[0] == cpu, "a refusal changed the placement")
        #expect(op_queue_set_cpus(queue, &set) == 0)
        var empty = cpu_set_t()
        #expect(op_queue_set_cpus(queue, &empty) == EINVAL, "an empty set is refused")
        #expect(op_queue_set_numa_node(queue, 4096) == EINVAL)
        #expect(op_queue_set_numa_node(queue, -1) == EINVAL)
        #expect(op_queue_cpu_list(queue, &placed, placed.count) == 1)
        #expect(op_queue_set_cpus(queue, nil) == 0)
        #expect(op_queue_cpu_list(queue, &placed, placed.count) == 0, "NULL did not lift the placement")
        #expect(op_queue_set_numa_node(queue, 0) == 0)
        #expect(op_queue_cpu_list(queue, &placed, placed.count) >= 1)
        #expect(op_queue_set_cpus(nil, nil) == EINVAL)
    }

    // A notice registered while the thread that took the queue idle is still in its idle work
    // (releasing finished contexts), after new work came, ran at once: told "idle" with work
    // unfinished (an await of waitUntilAllOperationsAreFinished returned with 355 of 10 000
    // operations not run, under the whole suite's load). The notice now waits for that work.
    @Test func aNoticeRegisteredWhileTheIdlePathRunsWaitsForWorkAddedMeanwhile() throws {
        let queue = try makeQueue("stale idle")
        defer { op_queue_release(queue) }
        let state = SlowIdle()
        slowIdleState = state
        defer { slowIdleState = nil }
        #expect(op_queue_set_tracking(queue, slowRelease) == 0)
        let probe = JobProbe()
        let first = try makeTask(countBody, contextPointer(probe))
        defer { op_task_release(first) }
        #expect(op_queue_submit(queue, first) == 0)
        // The first task finished; the thread that took the queue idle releases its context.
        try #require(state.releasing.wait(for: 1, seconds: Limits.waitSeconds), "the idle path did not release")
        let gated = try makeTask(gatedBody, contextPointer(probe))
        defer { op_task_release(gated) }
        #expect(op_queue_submit(queue, gated) == 0)
        #expect(op_queue_notify_idle(queue, noticeBody, Unmanaged.passRetained(Notice(probe, 1)).toOpaque()) == 0)
        state.proceed.open() // the idle path goes on: it must not run the notice now
        #expect(probe.started.wait(for: 1, seconds: Limits.waitSeconds))
        usleep(UInt32(Limits.quietNs / 1000)) // nothing may happen meanwhile
        #expect(probe.notices.withLock { $0 }.isEmpty, "the notice ran while a task of the queue was unfinished")
        probe.gate.open()
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        let deadline = monotonicNs() + Limits.waitNs
        while probe.notices.withLock({ $0 }).isEmpty && monotonicNs() < deadline { usleep(1000) }
        #expect(probe.notices.withLock { $0 } == [1], "the notice did not run once the queue was idle")
    }
}
