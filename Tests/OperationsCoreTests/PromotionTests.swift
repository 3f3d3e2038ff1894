// PromotionTests.swift — QoS promotion (issue 23 part 2): work that higher-QoS work waits for
// runs at the waiter's class until it finished, and goes back exactly afterwards. In-process,
// with whatever privilege the test run has: a running body is raised only where the process may
// lower nice values (checked with op_runtime_lowest_nice); the unprivileged case runs for real in
// a child (UnprivilegedNiceTests, Tests/Probes/unprivileged_nice_probe.c).
//
// One serialized suite with the process to itself: it reads the nice values of workers.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// What a body saw: the nice values it ran at (first and lowest, while it was held), its thread.
private final class PromotionRecord: Sendable {
    let firstNice = Atomic<Int32>(Int32.min)
    let lowestNice = Atomic<Int32>(Int32.max)
    let tid = Atomic<Int32>(0)
    let started = Atomic<Bool>(false)
    let release = Atomic<Bool>(false)
    let finished = Atomic<Bool>(false)
    let waitResult = Atomic<Int32>(-1)
    nonisolated(unsafe) var target: OpaquePointer? // the task or queue a waiter body waits for
    init() {}
}

/// Records its nice, then, until released (at most Limits.waitNs), keeps recording the lowest.
private let heldBody: TaskBody = { context in
    let record = contextObject(context, as: PromotionRecord.self)
    let nice = op_current_thread_nice()
    record.firstNice.store(nice, ordering: .relaxed)
    record.lowestNice.store(nice, ordering: .relaxed)
    record.tid.store(op_current_thread_id(), ordering: .relaxed)
    record.started.store(true, ordering: .releasing)
    let start = monotonicNs()
    while !record.release.load(ordering: .acquiring) && monotonicNs() - start < Limits.waitNs {
        record.lowestNice.min(op_current_thread_nice(), ordering: .relaxed)
        sleepNs(1_000_000)
    }
    record.lowestNice.min(op_current_thread_nice(), ordering: .relaxed)
    record.finished.store(true, ordering: .releasing)
}

private let waitTaskBody: TaskBody = { context in
    let record = contextObject(context, as: PromotionRecord.self)
    record.started.store(true, ordering: .releasing)
    record.waitResult.store(op_task_wait(record.target, Limits.waitNs), ordering: .relaxed)
}

private let waitQueueBody: TaskBody = { context in
    let record = contextObject(context, as: PromotionRecord.self)
    record.started.store(true, ordering: .releasing)
    record.waitResult.store(op_queue_wait(record.target, Limits.waitNs), ordering: .relaxed)
}

/// Workers (and spares) that the blocked-worker monitor counts blocked now.
private func blockedWorkers() -> Int {
    var workers = [op_worker_counters_t](repeating: op_worker_counters_t(), count: 1024)
    let listed = min(op_runtime_worker_counters(&workers, workers.count), workers.count)
    return workers[..<listed].filter { $0.state == OP_WORKER_BLOCKED }.count
}

/// The bodies pool `name` ("background", ...) counts blocked, from op_runtime_describe's line for
/// the pool ("pool of class background: ..., N blocked, ..."); nil if not found.
private func blockedCount(ofPool name: String) -> Int? {
    var text = [CChar](repeating: 0, count: 1 << 16)
    let length = min(op_runtime_describe(&text, text.count), text.count - 1)
    let report = String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    for line in report.split(separator: "\n") where line.contains("pool of class \(name):") {
        guard let end = line.range(of: " blocked,") else { continue }
        return line[..<end.lowerBound].split(separator: " ").last.flatMap { Int($0) }
    }
    return nil
}

/// Polls `condition` until true or the deadline; false on timeout.
private func promotionEventually(_ seconds: Double = Limits.waitSeconds, _ condition: () -> Bool) -> Bool {
    let start = monotonicNs()
    while !condition() {
        if secondsSince(start) > seconds { return false }
        sleepNs(200_000)
    }
    return true
}

private func classNice(_ qos: op_qos_t) -> Int32 { op_runtime_nice_for(qos, 0.5) }
/// Whether this process may raise a running body of class `from` to `to` (renice another thread).
private func canRaiseRunning(to qos: op_qos_t) -> Bool { op_runtime_lowest_nice() <= classNice(qos) }

@Suite(.needsQuietProcess, .serialized)
struct PromotionTests {
    init() {
        #expect(op_runtime_qos_promotion(), "OPERATIONS_QOS_PROMOTION is off for the test run")
    }

    /// A queued task promoted to userInteractive runs at that class's nice value, on its
    /// workers; its queue runs at that class meanwhile (the running body ahead of it is reniced
    /// where the process may) and goes back to its own class when the task finished; the
    /// thread that ran the held body is back at its class's nice value.
    @Test func queuedTaskPromotedRunsAtRaisedClassAndEverythingGoesBack() throws {
        let queue = try makeQueue("promote-queued", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(queue) }
        let gate = PromotionRecord(), promoted = PromotionRecord()
        let gateTask = try makeTask(heldBody, contextPointer(gate))
        let task = try makeTask(heldBody, contextPointer(promoted))
        defer { op_task_release(gateTask); op_task_release(task) }
        promoted.release.store(true, ordering: .releasing)
        #expect(op_queue_submit(queue, gateTask) == 0)
        try #require(eventually { gate.started.load(ordering: .acquiring) }, "the held body never started")
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_task_promoted_qos(task) == -1)
        #expect(op_task_promote(task, OP_QOS_USER_INTERACTIVE) == 0)
        #expect(op_task_promoted_qos(task) == Int32(OP_QOS_USER_INTERACTIVE.rawValue))
        #expect(op_queue_effective_qos(queue) == OP_QOS_USER_INTERACTIVE)
        #expect(op_queue_qos(queue) == OP_QOS_BACKGROUND, "the queue's own QoS is unchanged")
        if canRaiseRunning(to: OP_QOS_USER_INTERACTIVE) {
            #expect(eventually { gate.lowestNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE) },
                    "the running body ahead was not reniced: lowest \(gate.lowestNice.load(ordering: .relaxed))")
        }
        gate.release.store(true, ordering: .releasing)
        #expect(op_task_wait(task, Limits.waitNs) == 0)
        #expect(op_task_wait(gateTask, Limits.waitNs) == 0)
        #expect(promoted.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE),
                "the promoted body ran at nice \(promoted.firstNice.load(ordering: .relaxed))")
        #expect(gate.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_BACKGROUND))
        #expect(op_queue_effective_qos(queue) == OP_QOS_BACKGROUND, "the queue's raise was not undone")
        let tid = gate.tid.load(ordering: .relaxed)
        #expect(promotionEventually(5) { niceOfThread(tid) == classNice(OP_QOS_BACKGROUND) },
                "the held body's worker stayed at nice \(String(describing: niceOfThread(tid)))")
        #expect(op_task_promoted_qos(task) == Int32(OP_QOS_USER_INTERACTIVE.rawValue), "still reported after it finished")
    }

    /// op_task_wait from a userInteractive body raises the queued task it waits for.
    @Test func waitFromHigherClassBodyPromotesTheAwaitedTask() throws {
        let low = try makeQueue("promote-wait-low", qos: OP_QOS_BACKGROUND, width: 1)
        let high = try makeQueue("promote-wait-high", qos: OP_QOS_USER_INTERACTIVE)
        defer { op_queue_release(low); op_queue_release(high) }
        let gate = PromotionRecord(), awaited = PromotionRecord(), waiter = PromotionRecord()
        let gateTask = try makeTask(heldBody, contextPointer(gate))
        let task = try makeTask(heldBody, contextPointer(awaited))
        awaited.release.store(true, ordering: .releasing)
        waiter.target = task
        let waiterTask = try makeTask(waitTaskBody, contextPointer(waiter))
        defer { op_task_release(gateTask); op_task_release(task); op_task_release(waiterTask) }
        #expect(op_queue_submit(low, gateTask) == 0)
        try #require(eventually { gate.started.load(ordering: .acquiring) })
        #expect(op_queue_submit(low, task) == 0)
        #expect(op_queue_submit(high, waiterTask) == 0)
        let raised = eventually { op_task_promoted_qos(task) == Int32(OP_QOS_USER_INTERACTIVE.rawValue) }
        gate.release.store(true, ordering: .releasing)
        #expect(raised, "the wait did not raise the task it waits for")
        #expect(op_task_wait(waiterTask, Limits.waitNs) == 0)
        #expect(waiter.waitResult.load(ordering: .relaxed) == 0)
        #expect(awaited.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE))
        #expect(op_queue_effective_qos(low) == OP_QOS_BACKGROUND)
    }

    /// A userInteractive task added to a background serial queue raises those ahead of it (they
    /// report it); the task itself reports no promotion; the queue goes back afterwards.
    @Test func higherClassTaskOnSerialQueueRaisesThoseAhead() throws {
        let queue = try makeQueue("promote-serial", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(queue) }
        let gate = PromotionRecord(), middle = PromotionRecord(), high = PromotionRecord()
        let gateTask = try makeTask(heldBody, contextPointer(gate))
        let middleTask = try makeTask(heldBody, contextPointer(middle))
        let highTask = try makeTask(heldBody, contextPointer(high), qos: qosAttr(OP_QOS_USER_INTERACTIVE))
        defer { op_task_release(gateTask); op_task_release(middleTask); op_task_release(highTask) }
        middle.release.store(true, ordering: .releasing)
        high.release.store(true, ordering: .releasing)
        #expect(op_queue_submit(queue, gateTask) == 0)
        try #require(eventually { gate.started.load(ordering: .acquiring) })
        #expect(op_queue_submit(queue, middleTask) == 0)
        #expect(op_queue_effective_qos(queue) == OP_QOS_BACKGROUND)
        #expect(op_queue_submit(queue, highTask) == 0)
        #expect(op_queue_effective_qos(queue) == OP_QOS_USER_INTERACTIVE)
        gate.release.store(true, ordering: .releasing)
        #expect(op_task_wait(highTask, Limits.waitNs) == 0)
        #expect(middle.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE))
        #expect(op_task_promoted_qos(middleTask) == Int32(OP_QOS_USER_INTERACTIVE.rawValue))
        #expect(op_task_promoted_qos(highTask) == -1)
        #expect(high.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE))
        #expect(op_queue_effective_qos(queue) == OP_QOS_BACKGROUND)
    }

    /// op_queue_wait from a userInteractive body raises the queue while it waits, and only then.
    @Test func queueWaitFromHigherClassRaisesTheQueueUntilItReturns() throws {
        let low = try makeQueue("promote-queue-wait", qos: OP_QOS_BACKGROUND, width: 1)
        let high = try makeQueue("promote-queue-waiter", qos: OP_QOS_USER_INTERACTIVE)
        defer { op_queue_release(low); op_queue_release(high) }
        let gate = PromotionRecord(), queued = PromotionRecord(), waiter = PromotionRecord()
        let gateTask = try makeTask(heldBody, contextPointer(gate))
        let task = try makeTask(heldBody, contextPointer(queued))
        queued.release.store(true, ordering: .releasing)
        waiter.target = low
        let waiterTask = try makeTask(waitQueueBody, contextPointer(waiter))
        defer { op_task_release(gateTask); op_task_release(task); op_task_release(waiterTask) }
        #expect(op_queue_submit(low, gateTask) == 0)
        try #require(eventually { gate.started.load(ordering: .acquiring) })
        #expect(op_queue_submit(low, task) == 0)
        #expect(op_queue_submit(high, waiterTask) == 0)
        let raised = eventually { op_queue_effective_qos(low) == OP_QOS_USER_INTERACTIVE }
        if raised && canRaiseRunning(to: OP_QOS_USER_INTERACTIVE) {
            #expect(eventually { gate.lowestNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE) },
                    "the running body was not reniced")
        }
        gate.release.store(true, ordering: .releasing)
        #expect(raised, "the queue wait did not raise the queue")
        #expect(op_task_wait(waiterTask, Limits.waitNs) == 0)
        #expect(waiter.waitResult.load(ordering: .relaxed) == 0)
        #expect(queued.firstNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE))
        #expect(op_queue_effective_qos(low) == OP_QOS_BACKGROUND, "the wait's raise was not undone")
        let tid = gate.tid.load(ordering: .relaxed)
        #expect(promotionEventually(5) { niceOfThread(tid) == classNice(OP_QOS_BACKGROUND) },
                "the raised worker stayed at nice \(String(describing: niceOfThread(tid)))")
    }

    /// Bodies that the blocked-worker monitor counts blocked (they sleep where the core cannot
    /// see, with work waiting behind their default-width queue: the monitor lends their slots)
    /// and that a promoter raises, before the monitor's looks or after its lending. Both mark
    /// one word of the worker (`run`, pool_private.h), each its own bits; at each body's end
    /// both are undone: every thread is back at its class's nice value, and the pool counts no
    /// body blocked. Unprivileged (no renice of another thread) the promoter leaves the word
    /// alone and only the monitor's half is checked; UnprivilegedNiceTests covers the rest.
    @Test(arguments: [false, true])
    func bodiesCountedBlockedAndRaisedArePutBackAtTheirEnd(raiseFirst: Bool) throws {
        let width = Int(currentTopology().default_width)
        let canRaise = canRaiseRunning(to: OP_QOS_USER_INTERACTIVE)
        let queue = try makeQueue("promote-blocked", qos: OP_QOS_BACKGROUND)
        defer { op_queue_release(queue) }
        let held = (0..<width).map { _ in PromotionRecord() }
        // However the test ends, the held bodies end: they hold background workers.
        defer { held.forEach { $0.release.store(true, ordering: .releasing) } }
        let extra = PromotionRecord()
        extra.release.store(true, ordering: .releasing)
        let tasks = try held.map { try makeTask(heldBody, contextPointer($0)) }
        let extraTask = try makeTask(heldBody, contextPointer(extra))
        defer { tasks.forEach { op_task_release($0) }; op_task_release(extraTask) }
        var before = op_runtime_counters_t()
        #expect(op_runtime_counters(&before) == 0)
        for task in tasks { #expect(op_queue_submit(queue, task) == 0) }
        try #require(eventually { held.allSatisfy { $0.started.load(ordering: .acquiring) } },
                     "\(width) held bodies did not all start at the default width \(width)")
        let raise = {
            for task in tasks { #expect(op_task_promote(task, OP_QOS_USER_INTERACTIVE) == 0) }
            guard canRaise else { return }
            for record in held {
                #expect(eventually { record.lowestNice.load(ordering: .relaxed) == classNice(OP_QOS_USER_INTERACTIVE) },
                        "a running body was not reniced: lowest \(record.lowestNice.load(ordering: .relaxed))")
            }
        }
        if raiseFirst { raise() }
        // Work behind the width: the monitor lends the slot of a body it finds asleep twice.
        #expect(op_queue_submit(queue, extraTask) == 0)
        let lent = eventually { extra.finished.load(ordering: .acquiring) }
        if !raiseFirst { raise() }
        // Counted blocked and raised at once (the monitor's LENT beside the promoter's bits).
        let blockedWhileRaised = eventually { blockedWorkers() > 0 }
        if canRaise {
            var after = op_runtime_counters_t()
            #expect(op_runtime_counters(&after) == 0)
            #expect(after.promotions - before.promotions >= UInt64(width),
                    "\(after.promotions - before.promotions) of \(width) running bodies were reniced")
        }
        held.forEach { $0.release.store(true, ordering: .releasing) }
        for task in tasks { #expect(op_task_wait(task, Limits.waitNs) == 0) }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(lent, "the monitor lent no slot of a body asleep behind the width")
        #expect(blockedWhileRaised, "no raised body was counted blocked")
        for record in held {
            let tid = record.tid.load(ordering: .relaxed)
            #expect(promotionEventually(5) { niceOfThread(tid) == classNice(OP_QOS_BACKGROUND) },
                    "a raised worker stayed at nice \(String(describing: niceOfThread(tid)))")
        }
        #expect(promotionEventually(5) { blockedWorkers() == 0 && blockedCount(ofPool: "background") == 0 },
                "a body stayed counted blocked after it returned: \(String(describing: blockedCount(ofPool: "background"))) in the pool")
    }

    /// The waiter's class: a body's own class, a plain thread's from its nice value.
    @Test func currentThreadQoS() throws {
        let queue = try makeQueue("promote-current", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        final class Seen: Sendable { let qos = Atomic<UInt32>(99) }
        let seen = Seen()
        let task = try makeTask({ context in
            contextObject(context, as: Seen.self).qos.store(op_current_thread_qos().rawValue, ordering: .relaxed)
        }, contextPointer(seen))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_task_wait(task, Limits.waitNs) == 0)
        #expect(seen.qos.load(ordering: .relaxed) == OP_QOS_UTILITY.rawValue)
        let nice = op_current_thread_nice()
        // An ordinary thread has no QoS (background: it raises nothing) unless reniced below 0.
        let expected = nice <= -4 ? OP_QOS_USER_INTERACTIVE : nice < 0 ? OP_QOS_USER_INITIATED : OP_QOS_BACKGROUND
        #expect(op_current_thread_qos() == expected)
    }

    /// A task counted on its serial queue at its own class that starts while the queue is raised
    /// higher: its finish takes its own count off, and the waiter's end takes the waiter's (in a
    /// child process: the counts are the queue's, the effective class is what is checked).
    @Test func aCountedTaskStartedUnderAHigherRaiseTakesOffItsOwnCount() async throws {
        let path = try await ProbeBuilder.shared.binary("promotion_count_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        #expect(result.exitCode == 0, "a queue's raise counts came off at the wrong class:\n\(result)")
    }

    /// The switch (`op_runtime_set_qos_promotion`, `OperationsRuntime.qosPromotion`) stops new
    /// raises, and raises made before it went off are still undone: in a child process, since
    /// the switch is process-wide.
    @Test func switchingPromotionOffStopsNewRaisesAndUndoesTheMadeOnes() async throws {
        let path = try await ProbeBuilder.shared.binary("promotion_switch_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        #expect(result.exitCode == 0, "the promotion switch left a raise behind or raised while off:\n\(result)")
    }
}

// ---- counts that cannot overflow (issue 33, item 5) and jobs on a serial queue (item 8) --------

/// What the bodies of a promotion-count test saw: the class each body ran at
/// (op_current_thread_qos), per class, and a gate that holds the queue's head body.
private final class ClassTally: Sendable {
    /// Bodies that ran, per class they reported.
    let background = Atomic<Int>(0), utility = Atomic<Int>(0), normal = Atomic<Int>(0)
    let userInitiated = Atomic<Int>(0), userInteractive = Atomic<Int>(0)
    let gateStarted = Latch()
    let gateRelease = Latch()
    init() {}

    /// Counts a body that ran at `qos`.
    func note(_ qos: op_qos_t) {
        switch qos {
        case OP_QOS_BACKGROUND: background.add(1, ordering: .releasing)
        case OP_QOS_UTILITY: utility.add(1, ordering: .releasing)
        case OP_QOS_DEFAULT: normal.add(1, ordering: .releasing)
        case OP_QOS_USER_INITIATED: userInitiated.add(1, ordering: .releasing)
        default: userInteractive.add(1, ordering: .releasing)
        }
    }

    /// How many bodies reported `qos`.
    func count(_ qos: op_qos_t) -> Int {
        switch qos {
        case OP_QOS_BACKGROUND: background.load(ordering: .acquiring)
        case OP_QOS_UTILITY: utility.load(ordering: .acquiring)
        case OP_QOS_DEFAULT: normal.load(ordering: .acquiring)
        case OP_QOS_USER_INITIATED: userInitiated.load(ordering: .acquiring)
        default: userInteractive.load(ordering: .acquiring)
        }
    }
    /// Every body's report, as "class: count" for messages.
    var summary: String {
        allQoSClasses.map { "\(qosName($0)): \(count($0))" }.joined(separator: ", ")
    }
}

/// Records the class the body runs at.
private let tallyBody: TaskBody = { context in
    let tally = contextObject(context, as: ClassTally.self)
    tally.note(op_current_thread_qos())
}

/// Holds its queue until the test opens the gate (at most Limits.waitSeconds).
private let tallyGateBody: TaskBody = { context in
    let tally = contextObject(context, as: ClassTally.self)
    tally.gateStarted.open()
    tally.gateRelease.wait(for: 1, seconds: Limits.waitSeconds)
}

/// Promotions in the thousands and beyond: the old packed word (12 bits per class) carried the
/// 4 096th promotion into the next class.
private let promotionCounts = [4096, scaled(100_000, tsan: 20_000)]

extension PromotionTests {
    /// `count` userInitiated tasks wait on a serial background queue behind a held task and one
    /// background task: the queue runs at userInitiated (not above) while they wait, the
    /// background task ahead runs at userInitiated, each of them at userInitiated, and once all
    /// finished the queue is back at background (a task added then runs at background). With
    /// 12-bit counts the 4 096th raise carried into userInteractive and stayed there.
    @Test(arguments: promotionCounts)
    func fourThousandNinetySixHigherQoSTasksOnASerialQueueLeaveNoRaise(_ count: Int) throws {
        let queue = try makeQueue("promo-count-serial", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(queue) }
        let tally = ClassTally(), after = ClassTally()
        let context = contextPointer(tally)
        let gate = try makeTask(tallyGateBody, context)
        defer { op_task_release(gate) }
        #expect(op_queue_submit(queue, gate) == 0)
        try #require(tally.gateStarted.wait(seconds: Limits.waitSeconds), "the held task never started")
        let ahead = try makeTask(tallyBody, contextPointer(after))
        defer { op_task_release(ahead) }
        #expect(op_queue_submit(queue, ahead) == 0)
        var refused = 0
        for _ in 0..<count {
            let task = try makeTask(tallyBody, context, qos: qosAttr(OP_QOS_USER_INITIATED))
            if op_queue_submit(queue, task) != 0 { refused += 1 }
            op_task_release(task)
        }
        #expect(refused == 0, "\(refused) submits refused")
        let raised = op_queue_effective_qos(queue)
        tally.gateRelease.open()
        #expect(raised == OP_QOS_USER_INITIATED,
                "\(count) userInitiated tasks raised the queue to \(qosName(raised))")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not finish its \(count) tasks")
        #expect(tally.count(OP_QOS_USER_INITIATED) == count, "the tasks ran at: \(tally.summary)")
        #expect(after.count(OP_QOS_USER_INITIATED) == 1, "the task ahead ran at: \(after.summary)")
        let effective = op_queue_effective_qos(queue)
        #expect(effective == OP_QOS_BACKGROUND, "the queue stayed raised to \(qosName(effective))")
        let later = ClassTally()
        let laterTask = try makeTask(tallyBody, contextPointer(later))
        defer { op_task_release(laterTask) }
        #expect(op_queue_submit(queue, laterTask) == 0)
        #expect(op_task_wait(laterTask, Limits.waitNs) == 0)
        #expect(later.count(OP_QOS_BACKGROUND) == 1, "a task added afterwards ran at: \(later.summary)")
    }

    /// One userInitiated task depends on `count` unstarted tasks of a suspended background
    /// queue, each raised to its class (as the Swift layer's dependency walk raises them): the
    /// queue runs at userInitiated, its tasks run there once it resumes, and once they finished
    /// it is back at background.
    @Test(arguments: promotionCounts)
    func aTaskDependingOnFourThousandNinetySixUnstartedTasksOfAnotherQueueLeavesNoRaise(_ count: Int) throws {
        let low = try makeQueue("promo-count-deps", qos: OP_QOS_BACKGROUND)
        let high = try makeQueue("promo-count-dependent", qos: OP_QOS_USER_INITIATED)
        defer { op_queue_release(low); op_queue_release(high) }
        let tally = ClassTally(), dependentTally = ClassTally()
        let context = contextPointer(tally)
        let dependent = try makeTask(tallyBody, contextPointer(dependentTally))
        defer { op_task_release(dependent) }
        op_queue_set_suspended(low, true)
        var refused = 0
        for _ in 0..<count {
            let task = try makeTask(tallyBody, context)
            if op_task_add_dependency(dependent, task) != 0 { refused += 1 }
            if op_queue_submit(low, task) != 0 { refused += 1 }
            if op_task_promote(task, OP_QOS_USER_INITIATED) != 0 { refused += 1 }
            op_task_release(task)
        }
        #expect(refused == 0, "\(refused) calls refused")
        #expect(op_queue_submit(high, dependent) == 0)
        let raised = op_queue_effective_qos(low)
        op_queue_set_suspended(low, false)
        #expect(raised == OP_QOS_USER_INITIATED, "\(count) raised tasks raised their queue to \(qosName(raised))")
        #expect(op_task_wait(dependent, Limits.waitNs) == 0, "the dependent did not finish")
        #expect(op_queue_wait(low, Limits.waitNs) == 0)
        #expect(tally.count(OP_QOS_USER_INITIATED) == count, "the dependencies ran at: \(tally.summary)")
        #expect(dependentTally.count(OP_QOS_USER_INITIATED) == 1)
        let effective = op_queue_effective_qos(low)
        #expect(effective == OP_QOS_BACKGROUND, "the queue stayed raised to \(qosName(effective))")
        let later = ClassTally()
        let laterTask = try makeTask(tallyBody, contextPointer(later))
        defer { op_task_release(laterTask) }
        #expect(op_queue_submit(low, laterTask) == 0)
        #expect(op_task_wait(laterTask, Limits.waitNs) == 0)
        #expect(later.count(OP_QOS_BACKGROUND) == 1, "a task added afterwards ran at: \(later.summary)")
    }

    /// A job (op_queue_submit_job, as an executor or actor submits one) of userInteractive on a
    /// serial background queue behind a held task raises the queue while it waits, as a task of
    /// that class does: the background task between them runs at userInteractive, the job too,
    /// and the queue is back at background once the job finished.
    @Test func aHigherQoSJobOnASerialQueueRaisesItUntilItFinished() throws {
        let queue = try makeQueue("promo-job-serial", qos: OP_QOS_BACKGROUND, width: 1)
        defer { op_queue_release(queue) }
        let tally = ClassTally(), ahead = ClassTally(), job = ClassTally()
        let gate = try makeTask(tallyGateBody, contextPointer(tally))
        let aheadTask = try makeTask(tallyBody, contextPointer(ahead))
        defer { op_task_release(gate); op_task_release(aheadTask) }
        #expect(op_queue_submit(queue, gate) == 0)
        try #require(tally.gateStarted.wait(seconds: Limits.waitSeconds), "the held task never started")
        #expect(op_queue_submit(queue, aheadTask) == 0)
        #expect(op_queue_effective_qos(queue) == OP_QOS_BACKGROUND)
        #expect(op_queue_submit_job(queue, tallyBody, contextPointer(job), qosAttr(OP_QOS_USER_INTERACTIVE)) == 0)
        let raised = op_queue_effective_qos(queue)
        tally.gateRelease.open()
        #expect(raised == OP_QOS_USER_INTERACTIVE, "the waiting job left the queue at \(qosName(raised))")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(job.count(OP_QOS_USER_INTERACTIVE) == 1, "the job ran at: \(job.summary)")
        #expect(ahead.count(OP_QOS_USER_INTERACTIVE) == 1, "the task ahead of the job ran at: \(ahead.summary)")
        let effective = op_queue_effective_qos(queue)
        #expect(effective == OP_QOS_BACKGROUND, "the job's raise was not undone: \(qosName(effective))")
    }
}
