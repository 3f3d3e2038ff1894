// WorkerPoolTests.swift — the per-CPU pinned workers of each QoS class: how many, where they
// run, at which nice value, and that they go quiet when the work is done.
//
// The suite has the process to itself (.needsQuietProcess): it reads every worker's nice value,
// which the nice tests change on purpose. The idle-CPU measurement runs in a child process.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// Context of a body that waits for another task (which sits on a suspended queue).
private final class AwaitedTask: @unchecked Sendable {
    let task: OpaquePointer
    let result = Atomic<Int32>(-1)
    init(_ task: OpaquePointer) { self.task = task }
}

private let waitForAwaitedBody: TaskBody = { context in
    let awaited = contextObject(context, as: AwaitedTask.self)
    awaited.result.store(op_task_wait(awaited.task, 30_000_000_000), ordering: .relaxed)
}

/// A gate on a condition variable, which the core cannot see: bodies blocked on it sleep in
/// the kernel like bodies blocked on a lock or on I/O.
private final class KernelGate: @unchecked Sendable {
    let blocked = Latch()
    let release = Latch()
}

private let blockOnKernelGateBody: TaskBody = { context in
    let gate = contextObject(context, as: KernelGate.self)
    gate.blocked.arrive()
    _ = gate.release.wait(for: 1, seconds: 30)
}

private let arriveBody: TaskBody = { context in
    contextObject(context, as: Latch.self).arrive()
}

/// Parents that each release a child to their own queue and then wait, on a condition variable
/// the core cannot see, until every child ran.
private final class ParentsAndChildren: @unchecked Sendable {
    let queue: OpaquePointer
    let parents: Int
    let parentsRunning = Latch()
    let childrenRan = Latch()
    init(queue: OpaquePointer, parents: Int) {
        self.queue = queue
        self.parents = parents
    }
}

private let childOfParentBody: TaskBody = { context in
    contextObject(context, as: ParentsAndChildren.self).childrenRan.arrive()
}

private let parentReleasingAChildBody: TaskBody = { context in
    let state = contextObject(context, as: ParentsAndChildren.self)
    // Every slot is taken before any child is released: no slot is free to claim for them.
    state.parentsRunning.arrive()
    _ = state.parentsRunning.wait(for: state.parents, seconds: Limits.waitSeconds)
    _ = op_queue_submit_f(state.queue, childOfParentBody, context) // into this worker's own run queue
    _ = state.childrenRan.wait(for: state.parents, seconds: Limits.waitSeconds)
}

@Suite(.needsQuietProcess, .serialized)
struct WorkerPoolTests {
    @Test func bodiesBlockedOnChildrenTheyReleasedToTheirOwnFullQueueAreStoodInFor() throws {
        // Every slot of a default-width queue holds a body that released a child to the same
        // queue (into its worker's local run queue: no slot was free, so no drainer was called
        // for it) and then sleeps on a condition variable until all children ran. Nothing but
        // the monitor can help: it must count the children as waiting work, see the bodies
        // asleep, lend their slots, and spares must steal the children from the sleepers' local
        // run queues.
        let workers = Int(currentTopology().cpu_count)
        let queue = try makeQueue("parents") // default width: one per worker
        defer { op_queue_release(queue) }
        let state = ParentsAndChildren(queue: queue, parents: workers)
        for _ in 0..<workers {
            #expect(op_queue_submit_f(queue, parentReleasingAChildBody, contextPointer(state)) == 0)
        }
        #expect(state.parentsRunning.wait(for: workers, seconds: Limits.waitSeconds),
                "\(state.parentsRunning.arrivals) of \(workers) parents ran at once")
        let started = monotonicNs()
        #expect(state.childrenRan.wait(for: workers, seconds: 10),
                "\(state.childrenRan.arrivals) of \(workers) children ran while their parents slept on them")
        print("[WorkerPoolTests] children ran \((monotonicNs() - started) / 1_000_000) ms after their parents blocked")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }


    @Test func workersBlockedInBodiesWhereTheCoreCannotSeeGetSparesWhileWorkWaits() throws {
        // Every default worker blocked on a condition variable: the blocked-worker monitor sees
        // them asleep while tokens wait, and spares run the rest of the class's work; a queue
        // of default width gets the blocked bodies' slots lent. The spares leave afterwards.
        let workers = Int(currentTopology().cpu_count)
        let gate = KernelGate()
        let blockers = try makeQueue("blockers") // default width: one per worker
        defer { op_queue_release(blockers) }
        for _ in 0..<workers { #expect(op_queue_submit_f(blockers, blockOnKernelGateBody, contextPointer(gate)) == 0) }
        #expect(gate.blocked.wait(for: workers, seconds: 10), "\(workers) bodies blocked at once")
        let ran = Latch()
        let other = try makeQueue("other")
        defer { op_queue_release(other) }
        #expect(op_queue_submit_f(other, arriveBody, contextPointer(ran)) == 0)
        #expect(op_queue_submit_f(blockers, arriveBody, contextPointer(ran)) == 0) // on a lent slot
        let started = monotonicNs()
        #expect(ran.wait(for: 2, seconds: 10), "work of the class ran while every worker was blocked in a body")
        let waitedMs = (monotonicNs() - started) / 1_000_000
        #expect(op_runtime_spare_workers(OP_QOS_DEFAULT, nil) > 0, "spares stand in for the blocked workers")
        print("[WorkerPoolTests] work ran \(waitedMs) ms after every worker blocked in a body")
        gate.release.open()
        #expect(op_queue_wait(blockers, 30_000_000_000) == 0)
        #expect(op_queue_wait(other, 30_000_000_000) == 0)
        let deadline = monotonicNs() + 10_000_000_000
        var left = op_runtime_spare_workers(OP_QOS_DEFAULT, nil)
        while left > 0 && monotonicNs() < deadline {
            sleepNs(1_000_000)
            left = op_runtime_spare_workers(OP_QOS_DEFAULT, nil)
        }
        #expect(left == 0, "spares still serving the class after the bodies returned: \(left)")
    }

    @Test(arguments: allQoSClasses)
    func asManyBlockingTasksAsWorkersAllRunAtOnceOnEveryWorker(qos: op_qos_t) throws {
        // N tasks that each wait until all N run, on a queue N wide, for N = every CPU of the
        // process: every worker of the class must take one (issue 14, item 1: on 16 CPUs a
        // burst of tokens pushed while one worker searched woke one helper only).
        for round in 0..<3 {
            let ran = try runOneTaskOnEveryWorker(qos)
            #expect(ran?.count == Int(op_runtime_worker_count(qos)), "round \(round), \(qosName(qos))")
        }
    }

    @Test func workersAsleepInWaitsGetSparesWhichLeaveAfterwards() throws {
        let workers = Int(currentTopology().cpu_count)
        let held = try makeQueue("held", width: 1)
        defer { op_queue_release(held) }
        op_queue_set_suspended(held, true)
        let awaitedTask = try makeTask(emptyBody, nil)
        defer { op_task_release(awaitedTask) }
        #expect(op_queue_submit(held, awaitedTask) == 0)
        let awaited = AwaitedTask(awaitedTask)
        let waiters = try makeQueue("waiters") // default width: one per worker
        defer { op_queue_release(waiters) }
        // One more waiter than workers: it can only start on a lent slot, run by a spare.
        for _ in 0...workers { #expect(op_queue_submit_f(waiters, waitForAwaitedBody, contextPointer(awaited)) == 0) }
        // Every waiter asleep has a spare standing in (the count now, not the process's peak).
        var spares: Int32 = 0
        let deadline = monotonicNs() + 10_000_000_000
        while monotonicNs() < deadline {
            spares = op_runtime_spare_workers(OP_QOS_DEFAULT, nil)
            if spares > workers { break }
            sleepNs(1_000_000)
        }
        #expect(spares > Int32(workers), "\(spares) spare threads while \(workers + 1) bodies wait")
        op_queue_set_suspended(held, false)
        #expect(op_queue_wait(waiters, 30_000_000_000) == 0, "every waiter returned")
        #expect(awaited.result.load(ordering: .relaxed) == 0)
        var left = op_runtime_spare_workers(OP_QOS_DEFAULT, nil)
        while left > 0 && monotonicNs() < deadline + 10_000_000_000 {
            sleepNs(1_000_000)
            left = op_runtime_spare_workers(OP_QOS_DEFAULT, nil)
        }
        #expect(left == 0, "spares still serving the class after every wait returned: \(left)")
    }

    @Test func topologyCountsTheCPUsOfTheAffinityMask() throws {
        let topology = currentTopology()
        let mask = try #require(affinityCPUs(ofThread: 0), "sched_getaffinity failed")
        #expect(Int(topology.cpu_count) == mask.count,
                "cpu_count \(topology.cpu_count), affinity mask \(mask)")
        #expect(topology.node_count >= 1)
        for index in 0..<Int32(topology.cpu_count) {
            var cpu: Int32 = -1, node: Int32 = -1
            #expect(op_runtime_cpu(index, &cpu, &node) == 0)
            #expect(mask.contains(Int(cpu)), "CPU \(cpu) of index \(index) is not in the mask \(mask)")
            #expect(node >= 0 && node < topology.node_count)
        }
        var cpu: Int32 = 0
        #expect(op_runtime_cpu(topology.cpu_count, &cpu, nil) == EINVAL)
        #expect(op_runtime_cpu(-1, &cpu, nil) == EINVAL)
    }

    @Test(arguments: allQoSClasses)
    func everyClassHasOnePinnedWorkerPerCPUAtItsNiceValue(qos: op_qos_t) throws {
        let topology = currentTopology()
        let table = niceTable()
        let wanted = table[Int(qos.rawValue)]
        let negativeAllowed = op_runtime_negative_nice_allowed()

        op_runtime_start_workers(qos)
        let count = op_runtime_worker_count(qos)
        #expect(count == topology.cpu_count,
                "\(qosName(qos)): \(count) workers for \(topology.cpu_count) CPUs")

        var pinnedCPUs: [Int32] = []
        for index in 0..<count {
            var info = op_worker_info_t()
            try #require(op_runtime_worker_info(qos, index, &info) == 0, "worker_info(\(qosName(qos)), \(index))")
            var cpu: Int32 = -1, node: Int32 = -1
            #expect(op_runtime_cpu(index, &cpu, &node) == 0)
            #expect(info.cpu == cpu && info.node == node,
                    "\(qosName(qos)) worker \(index): cpu/node \(info.cpu)/\(info.node), topology says \(cpu)/\(node)")
            pinnedCPUs.append(info.cpu)

            let affinity = affinityCPUs(ofThread: info.tid)
            #expect(affinity == [Int(info.cpu)],
                    "\(qosName(qos)) worker \(index) (tid \(info.tid)) affinity \(affinity.map { "\($0)" } ?? "unreadable"), expected exactly [\(info.cpu)]")

            let nice = niceOfThread(info.tid)
            #expect(nice == info.class_nice,
                    "\(qosName(qos)) worker \(index) (tid \(info.tid)) runs at nice \(nice.map { "\($0)" } ?? "?"), reports class_nice \(info.class_nice)")
            if negativeAllowed || wanted >= 0 {
                #expect(info.class_nice == wanted,
                        "\(qosName(qos)) worker \(index): class_nice \(info.class_nice), table says \(wanted)")
            } else {
                #expect(info.class_nice >= wanted)
            }
        }
        #expect(Set(pinnedCPUs).count == Int(count), "\(qosName(qos)) workers share CPUs: \(pinnedCPUs)")

        var info = op_worker_info_t()
        #expect(op_runtime_worker_info(qos, count, &info) == EINVAL)
        #expect(op_runtime_worker_info(qos, -1, &info) == EINVAL)
    }

    /// The workers of the default class and the latency classes ask the kernel for the shortest
    /// time slice (time_slice.c), so their wake-ups preempt lower-class bodies and the submitter
    /// that woke them on its own CPU; utility and background keep the kernel's default. Read from /proc/self/task/TID/sched ("se.slice", Linux 6.6 and later; the custom
    /// slice from 6.12): skipped with a note where the kernel shows none, or where the runtime
    /// found it refused or ignored (op_runtime_short_time_slice() 0).
    @Test(arguments: allQoSClasses)
    func defaultAndLatencyClassesWorkersAskForTheShortTimeSlice(qos: op_qos_t) throws {
        func slice(ofThread tid: Int32) -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/sched", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("se.slice") }),
                  let value = line.split(separator: ":").last else { return nil }
            return Int(value.trimmingCharacters(in: .whitespaces))
        }
        op_runtime_start_workers(qos)
        let short = qos.rawValue >= OP_QOS_DEFAULT.rawValue
        guard let own = slice(ofThread: op_current_thread_id()) else {
            print("[WorkerPoolTests] no se.slice in /proc/self/task/*/sched: time slices not checked")
            return
        }
        if short {
            // What the runtime says the kernel did: 100 µs, or 0 where it refused or ignored it
            // (older than 6.12: se.slice is shown from 6.6, a custom slice taken from 6.12).
            let granted = op_runtime_short_time_slice()
            #expect(granted == 100_000 || granted == 0, "op_runtime_short_time_slice() = \(granted) after the workers started")
            if granted == 0 {
                print("[WorkerPoolTests] the kernel refused or ignored the short time slice: not checked")
                return
            }
        }
        for index in 0..<op_runtime_worker_count(qos) {
            var info = op_worker_info_t()
            try #require(op_runtime_worker_info(qos, index, &info) == 0)
            let workerSlice = try #require(slice(ofThread: info.tid), "no se.slice for tid \(info.tid)")
            if short {
                if own == 100_000 {
                    // The test thread inherited the short slice itself: nothing tells them apart.
                    print("[WorkerPoolTests] the test thread runs with the 100 µs slice: \(qosName(qos)) not checked")
                    break
                }
                #expect(workerSlice == 100_000,
                        "\(qosName(qos)) worker \(index) runs with a \(workerSlice) ns slice, not 100 µs (the test thread's: \(own))")
            } else {
                // Not the short one (the test thread's own may be: a thread that a short-slice
                // worker's body created, as libdispatch's pool threads can be, inherits it).
                #expect(workerSlice != 100_000,
                        "\(qosName(qos)) worker \(index) runs with the 100 µs slice (the test thread's: \(own))")
            }
        }
    }

    /// In a child process (time_slice_probe.c), so the classes start in the order it chooses:
    /// the background and utility workers that a userInteractive body starts do not keep the
    /// short slice they inherit from it, and the default and latency classes' workers of a
    /// process under SCHED_BATCH get the short slice and keep the policy (sched_setattr without SCHED_FLAG_KEEP_POLICY moved
    /// them to SCHED_OTHER). Skipped with a note where the kernel refused or ignored the slice.
    @Test(arguments: ["inherit", "batch"])
    func theShortTimeSliceStaysWithTheDefaultAndLatencyWorkers(mode: String) async throws {
        let path = try await ProbeBuilder.shared.binary("time_slice_probe").get()
        let result = await runChild(path, [mode], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the time-slice probe did not exit:\n\(result)")
        try #require(result.exitCode == 0, "the time-slice probe failed:\n\(result)")
        let values = result.values
        guard values["granted"] == "100000" else {
            print("[WorkerPoolTests] the kernel refused or ignored the short time slice (granted=\(values["granted"] ?? "?")): not checked")
            return
        }
        #expect(values["latency_short"] == values["latency_workers"] && values["latency_workers"] != "0",
                "every default, userInitiated and userInteractive worker runs with the 100 µs slice:\n\(result)")
        if mode == "batch" {
            #expect(values["batch_kept"] == values["batch_workers"], "the latency workers left SCHED_BATCH:\n\(result)")
        } else {
            #expect(values["other_short"] == "0" && values["other_workers"] != "0",
                    "workers of other classes kept the slice they inherited from a userInteractive body:\n\(result)")
        }
    }

    /// Runs spinning_submitter_probe.c for `qos` (`fifo`: the probe spins under SCHED_FIFO) and
    /// returns how many of `rounds` tasks ran on the spinning submitter's CPU and how many of
    /// its own CPU's wake-ups the pool backed with a second one on another CPU, or nil (with a
    /// note) where nothing can be checked: one worker (one usable CPU), no worker states in
    /// /proc, or SCHED_FIFO refused (no privilege).
    private func tasksOnTheSpinningSubmittersCPU(_ qos: op_qos_t, rounds: Int, fifo: Bool) async throws
        -> (onSubmitterCPU: Int, backedWakes: Int, shortSlice: Bool)? {
        let path = try await ProbeBuilder.shared.binary("spinning_submitter_probe").get()
        let arguments = ["\(qos.rawValue)", "\(rounds)"] + (fifo ? ["fifo"] : [])
        let result = await runChild(path, arguments, environment: childEnvironment(), seconds: 90,
                                    backtraceOnTimeout: true)
        try #require(!result.timedOut, "the spinning-submitter probe did not exit:\n\(result)")
        if result.exitCode == 5 {
            print("[WorkerPoolTests] /proc shows no worker states: the wake-up choice not checked")
            return nil
        }
        try #require(result.exitCode == 0,
                     "the spinning-submitter probe failed (3: workers never all parked, 4: a task never started):\n\(result)")
        let values = result.values
        guard let workers = values["workers"].flatMap({ Int($0) }), workers >= 2 else {
            print("[WorkerPoolTests] \(qosName(qos)) has one worker: the wake-up choice not checked")
            return nil
        }
        if fifo && values["fifo"] != "1" {
            print("[WorkerPoolTests] SCHED_FIFO refused (no privilege): the backstop wake-up not checked")
            return nil
        }
        let onSubmitterCPU = try #require(values["on_submitter_cpu"].flatMap { Int($0) }, "\(result)")
        let backedWakes = try #require(values["backed_wakes"].flatMap { Int($0) }, "\(result)")
        return (onSubmitterCPU, backedWakes, values["short_slice"] == "100000")
    }

    /// A submitter that goes on running after its submit (it spins, here; a thread that computes
    /// does the same) keeps its CPU from a utility or background worker woken there, which is
    /// pinned and cannot move to an idle CPU: those classes' wake-ups go to a worker on another
    /// CPU (op_pool_wake_one). In a child process, pinned to one CPU, 20 rounds with every worker
    /// parked first. The old choice (the submitter's own CPU) ran 20 of 20 background and 14 of
    /// 20 utility tasks there, each after the spinner was preempted (1.9 ms p50 on 2 CPUs).
    @Test(arguments: [OP_QOS_BACKGROUND, OP_QOS_UTILITY])
    func aLowerClassWakeUpSkipsTheWorkerOnASpinningSubmittersCPU(qos: op_qos_t) async throws {
        guard let (onSubmitterCPU, backedWakes, _) =
            try await tasksOnTheSpinningSubmittersCPU(qos, rounds: 20, fifo: false) else { return }
        // Not the submitter's own CPU's worker first, then a second one: another CPU's at once.
        #expect(backedWakes == 0, "\(qosName(qos)) woke the submitter's own CPU's worker first \(backedWakes) times")
        // At most 6: the monitor's rescue of a task that waited a whole tick (a background worker
        // behind other load on its CPU) may still wake the submitter's own worker.
        #expect(onSubmitterCPU <= 6,
                "\(onSubmitterCPU) of 20 \(qosName(qos)) tasks ran on the spinning submitter's CPU, behind it")
    }

    /// The default class and above wake the worker on the submitter's own CPU, which preempts
    /// it (with the short slice); where it cannot (here the submitter spins under SCHED_FIFO,
    /// which no fair thread preempts) a worker on another CPU is woken as well
    /// (op_pool_wake_one's backstop), so the task starts there at once instead of waiting for
    /// the submitter, and the pool counts the second wake-up (op_runtime_describe). Without the
    /// backstop the blocked-worker monitor rescued each task after its 10 ms tick (the slowest
    /// of 10: 19-20 ms, with it 57-68 µs; the probe prints it, nothing asserts a time). Skipped
    /// without the privilege to use SCHED_FIFO.
    @Test(arguments: [OP_QOS_DEFAULT, OP_QOS_USER_INTERACTIVE])
    func aWakeUpThatCannotPreemptTheSubmitterIsBackedOnAnotherCPU(qos: op_qos_t) async throws {
        guard let (onSubmitterCPU, backedWakes, shortSlice) =
            try await tasksOnTheSpinningSubmittersCPU(qos, rounds: 10, fifo: true) else { return }
        #expect(onSubmitterCPU <= 2,
                "\(onSubmitterCPU) of 10 \(qosName(qos)) tasks waited for the SCHED_FIFO submitter on its CPU")
        // Each round's wake-up of the submitter's own CPU's worker cannot run (a round may find
        // that worker awake and skip it), with or without the short slice.
        #expect(backedWakes >= 7,
                "\(backedWakes) of 10 \(qosName(qos)) wake-ups backed on another CPU (short slice: \(shortSlice))")
    }

    @Test func runningAsRootAllowsNegativeNiceValues() {
        // The tests run as root (CAP_SYS_NICE); the clamp path is tested in a child process
        // without the privilege (ClampTests).
        guard getuid() == 0 else { return }
        #expect(op_runtime_negative_nice_allowed())
        #expect(op_runtime_lowest_nice() == -20)
        #expect(!op_runtime_nice_clamped(), "a nice value was clamped although the process runs as root")
    }

    /// Runs in a child process (idle_cpu_probe.c), so no other test's work is counted: after
    /// 10^5 empty tasks and 50 ms, the process uses under 15 ms of CPU in 300 ms of idleness.
    @Test func anIdleProcessUsesNoMeasurableCPUAfterWorkEnds() async throws {
        let path = try await ProbeBuilder.shared.binary("idle_cpu_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        let hung = result.timedOut
        try #require(!hung, "the idle-CPU probe did not exit:\n\(result)")
        #expect(result.exitCode == 0, "the idle-CPU probe failed:\n\(result)")
        let cpu = Int64(result.values["cpu_ns"] ?? "") ?? -1
        let wall = Int64(result.values["wall_ns"] ?? "") ?? -1
        print("[anIdleProcessUsesNoMeasurableCPUAfterWorkEnds] \(Double(cpu) / 1e6) ms CPU in \(Double(wall) / 1e6) ms idle")
        #expect(cpu >= 0 && cpu < 15_000_000,
                "the runtime used \(Double(cpu) / 1e6) ms of CPU during \(Double(wall) / 1e6) ms of idleness (limit 15 ms): workers keep spinning?\n\(result)")
    }

    /// Runs in a child process (hand_over_wake_probe.c), so no other test's workers are woken:
    /// a drainer that carries a userInteractive task to that class's pool hands it over and wakes
    /// the userInteractive worker on its own CPU first (it stops running that work; the woken
    /// worker preempts it), not the next one after it (W9 "one queue, width CPUs": two wake-ups
    /// of the other vCPU cost 50-100 µs each). Which worker is woken first does not depend on
    /// timing (B is submitted before A, so it becomes ready in A's finish on A's drainer, and the
    /// count is read once every woken worker parked again): 119 of 120 trials on the 2-CPU VM, 0
    /// of 120 with the hand-over waking as a worker does (the mutation); at least three in four
    /// must show it. Needs 2 CPUs.
    @Test func aCarriedTaskWakesTheWorkerOnTheCarriersOwnCPU() async throws {
        let path = try await ProbeBuilder.shared.binary("hand_over_wake_probe").get()
        let result = await runChild(path, ["40"], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the hand-over probe did not exit:\n\(result)")
        if result.exitCode == 3 { return } // one CPU: no other worker to choose
        #expect(result.exitCode == 0, "the hand-over probe failed:\n\(result)")
        let trials = Int(result.values["trials"] ?? "") ?? -1
        let own = Int(result.values["own_cpu_woken"] ?? "") ?? -1
        let skipped = Int(result.values["skipped"] ?? "") ?? -1
        #expect(trials == 40 && skipped >= 0 && skipped <= 20,
                "too few trials found the userInteractive workers parked:\n\(result)")
        #expect(own >= 0 && own * 4 >= (trials - skipped) * 3,
                "\(own) of \(trials - skipped) carries woke the userInteractive worker on the carrier's CPU:\n\(result)")
    }

    /// Runs in a child process (spare_reuse_probe.c), so no other test's spares are counted:
    /// twenty bodies block in a wait one after another, and the spare that stood in for the
    /// first is reused by the next (it lingers parked) instead of a thread created per wait.
    @Test func blockingWaitsOneAfterAnotherReuseTheirSpareThread() async throws {
        let path = try await ProbeBuilder.shared.binary("spare_reuse_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), seconds: 60, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the spare-reuse probe did not exit:\n\(result)")
        #expect(result.exitCode == 0, result.exitCode == 1
                ? "twenty waits one after another used \(result.values["distinct"] ?? "?") spare threads (1 to 3 expected):\n\(result)"
                : "the spare-reuse probe failed (a wait timed out or a call failed):\n\(result)")
    }
}

/// The NUMA fallback, in child processes (topology is read once per process).
@Suite
struct TopologyFallbackTests {
    @Test(arguments: [false, true])
    func workersArePinnedWithAndWithoutNUMAAndTheFallbackSaysWhy(numaOff: Bool) async throws {
        let path = try await ProbeBuilder.shared.binary("topology_probe").get()
        var environment = childEnvironment()
        if numaOff { environment["OPERATIONS_NUMA"] = "off" } else { environment["OPERATIONS_NUMA"] = nil }
        let result = await runChild(path, [], environment: environment, seconds: 30, backtraceOnTimeout: true)
        let hung = result.timedOut
        try #require(!hung, "the topology probe did not exit:\n\(result)")
        #expect(result.exitCode == 0, "\(result)")
        let values = result.values
        let cpus = Int(values["cpus"] ?? "") ?? -1
        #expect(values["workers"] == "\(5 * cpus)", "one worker per CPU per class:\n\(result)")
        #expect(values["pinned"] == values["workers"], "every worker's affinity is exactly its CPU:\n\(result)")
        if numaOff {
            #expect(values["numa"] == "0", "OPERATIONS_NUMA=off must turn NUMA off:\n\(result)")
            #expect(values["reason"]?.contains("OPERATIONS_NUMA=off") == true, "the fallback says why:\n\(result)")
        } else if values["numa"] == "0" {
            // A machine without NUMA (or with NUMA calls denied) must say why.
            #expect(values["reason"] != "-", "NUMA is off without a reason:\n\(result)")
        } else {
            #expect(values["reason"] == "-", "\(result)")
        }
    }
}

/// The start-up window of a pool, in child processes (each class's pool starts once per
/// process). No ProcessLock trait: nothing runs in this process.
@Suite
struct WorkerStartupTests {
    /// While a pool starts, every worker that op_runtime_worker_count() counts must be reachable
    /// with op_runtime_worker_info(qos, i) for i < count. Workers start in any order, so this
    /// looks at up to 10 processes × 5 pool start-ups.
    @Test func workerInfoReachesEveryCountedWorkerWhileAPoolStarts() async throws {
        let path = try await ProbeBuilder.shared.binary("worker_startup_probe").get()
        for attempt in 1...10 {
            let result = await runChild(path, [], environment: childEnvironment(), seconds: 30, backtraceOnTimeout: true)
            let hung = result.timedOut
            try #require(!hung, "the start-up probe did not exit:\n\(result)")
            if result.exitCode != 0 {
                Issue.record("process \(attempt): a worker counted by op_runtime_worker_count() is not reachable through op_runtime_worker_info():\n\(result)")
                return
            }
        }
    }
}
