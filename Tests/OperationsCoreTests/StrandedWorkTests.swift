// StrandedWorkTests.swift — work that waited where nothing would run it.
//
// A queue that moves to another class or CPU set while its token waits in the old pool. Found by the liveness fuzzer under the whole suite's load (seed
// 16981687388880741592): a default queue's token was pushed to the default pool, the queue moved
// to the utility class, and every worker of the default pool ran long bodies of other tests; the
// token, which held the queue's last slot and a busy unit, waited there for more than 10 s while
// the utility pool idled, and waitUntilAllOperationsAreFinished with it. The token must follow
// its queue (op_pool_rehome_tokens: at the change, and the monitor's backstop for a push that
// races the change).
//
// Tasks that wait visibly (op_task_wait) at an explicit width that let them all run, for a task
// of their queue that becomes ready after the width became the default, which they exceed. A
// visible wait lends its slot only when its queue has the default width as it begins; the
// monitor now lends it when the width became the default since.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// Bodies that compute (spin) until told to stop, or until their own deadline.
private final class Spinners: Sendable {
    let started = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let deadline: Int64
    init(seconds: Double) { deadline = monotonicNs() + Int64(seconds * 1e9) }
}

private let spinBody: TaskBody = { context in
    let spinners = contextObject(context, as: Spinners.self)
    spinners.started.add(1, ordering: .sequentiallyConsistent)
    while !spinners.stop.load(ordering: .relaxed) && monotonicNs() < spinners.deadline {}
}

/// A task that waits visibly for another (`awaited`, set before it runs), with a deadline far
/// beyond the test's, so the wait never ends a slice on its own.
private final class VisibleWaiters: @unchecked Sendable {
    var awaited: OpaquePointer?
    let started = Latch()
    let returned = Latch()
}

private let waitVisiblyBody: TaskBody = { context in
    let state = contextObject(context, as: VisibleWaiters.self)
    state.started.arrive()
    _ = op_task_wait(state.awaited, 2 * Limits.waitNs)
    state.returned.arrive()
}

private let openLatchBody: TaskBody = { context in
    contextObject(context, as: Latch.self).open()
}

@Suite(.needsQuietProcess, .serialized) struct StrandedWorkTests {
    @Test(arguments: [false, true])
    func tokenWaitingInABusyPoolFollowsItsQueueToItsNewPool(byPlacement: Bool) throws {
        // Every worker of the default pool computes (not asleep: the monitor rightly starts no
        // spare for them), on a queue whose explicit width is the pool's size.
        op_runtime_start_workers(OP_QOS_DEFAULT)
        let workers = Int(op_runtime_worker_count(OP_QOS_DEFAULT))
        try #require(workers > 0)
        let spinners = Spinners(seconds: Limits.waitSeconds)
        let spinQueue = try makeQueue("spinners", width: Int32(workers))
        defer { op_queue_release(spinQueue) }
        var tasks: [OpaquePointer] = []
        defer { tasks.forEach { op_task_release($0) } }
        for _ in 0..<workers {
            let task = try makeTask(spinBody, contextPointer(spinners))
            tasks.append(task)
            #expect(op_queue_submit(spinQueue, task) == 0)
        }
        defer {
            spinners.stop.store(true, ordering: .sequentiallyConsistent)
            #expect(op_queue_wait(spinQueue, Limits.waitNs) == 0)
        }
        let deadline = monotonicNs() + Limits.waitNs
        while spinners.started.load(ordering: .sequentiallyConsistent) < workers && monotonicNs() < deadline {
            usleep(100)
        }
        try #require(spinners.started.load(ordering: .sequentiallyConsistent) == workers,
                     "the spinning bodies did not all start")

        // A default queue's task: its token waits in the default pool, behind the spinners.
        let moved = try makeQueue(byPlacement ? "placed while its token waits" : "reclassed while its token waits")
        defer { op_queue_release(moved) }
        let ran = Latch()
        let task = try makeTask(openLatchBody, contextPointer(ran))
        tasks.append(task)
        #expect(op_queue_submit(moved, task) == 0)
        if byPlacement {
            var cpu: Int32 = 0
            var node: Int32 = 0
            op_runtime_cpu(0, &cpu, &node)
            var list = [cpu]
            #expect(op_queue_set_cpu_list(moved, &list, 1, nil) == 0)
        } else {
            #expect(op_queue_set_qos(moved, OP_QOS_UTILITY) == 0)
        }
        // It runs on the new pool's workers while the old pool's still compute.
        #expect(ran.wait(seconds: Limits.waitSeconds / 2),
                "the task of a queue moved to \(byPlacement ? "a CPU set" : "the utility class") waited in the old, busy pool")
        #expect(!spinners.stop.load(ordering: .relaxed) && monotonicNs() < spinners.deadline)
        #expect(op_queue_wait(moved, Limits.waitNs) == 0)
    }

    @Test func visibleWaitsBeyondAWidthThatBecameTheDefaultGetTheirSlotsLent() throws {
        var topology = op_topology_t()
        op_runtime_topology(&topology)
        let waiters = Int(topology.default_width) + 1
        let queue = try makeQueue("visible waiters", width: Int32(waiters))
        defer { op_queue_release(queue) }
        let state = VisibleWaiters()
        // The awaited task is held by a dependency completed by hand below.
        let gate = try makeTask(emptyBody, nil, flags: UInt32(OP_TASK_MANUAL_COMPLETION))
        let awaited = try makeTask(emptyBody, nil)
        defer { op_task_release(awaited); op_task_release(gate) }
        state.awaited = awaited
        #expect(op_task_add_dependency(awaited, gate) == 0)
        #expect(op_queue_submit(queue, awaited) == 0)
        var tasks: [OpaquePointer] = []
        defer { tasks.forEach { op_task_release($0) } }
        for _ in 0..<waiters {
            let task = try makeTask(waitVisiblyBody, contextPointer(state))
            tasks.append(task)
            #expect(op_queue_submit(queue, task) == 0)
        }
        try #require(state.started.wait(for: waiters, seconds: Limits.waitSeconds),
                     "\(waiters) waiting tasks did not all start at width \(waiters)")
        #expect(op_queue_set_width(queue, OP_WIDTH_DEFAULT) == 0)
        #expect(op_task_complete(gate) == 0)
        let returned = state.returned.wait(for: waiters, seconds: Limits.waitSeconds / 2)
        #expect(returned, "the task \(waiters) visible waits wait for stayed behind the default width (\(state.returned.arrivals) returned)")
        if !returned { op_queue_set_width(queue, Int32(waiters + 1)) } // free them before giving up
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }

    // Found by review, in child processes (C probes): a carried body (another class than its
    // queue's, carry.c) waiting for work its drainer had released into its own local run queue; and the
    // slot lent for a visible wait taken back once whatever the body does next.
    @Test(arguments: [Int(OP_QOS_UTILITY.rawValue), Int(OP_QOS_BACKGROUND.rawValue)])
    func carriedBodyWaitingForWorkItsDrainerReleasedGetsIt(qos: Int) async throws {
        let path = try await ProbeBuilder.shared.binary("carry_local_work_probe").get()
        let result = await runChild(path, [String(qos)], environment: childEnvironment(), backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        #expect(result.exitCode == 0, "the work the carried body waited for was stranded:\n\(result)")
    }

    @Test func aSlotLentForAVisibleWaitIsTakenBackOnce() async throws {
        let path = try await ProbeBuilder.shared.binary("relent_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        #expect(result.exitCode == 0, "\(result)")
    }
}
