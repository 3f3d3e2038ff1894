// CarryTests.swift — a task carried WITH its queue's slot (carry.c, drain.c: op_drain_execute,
// op_drain_run_carried, the drain loop's OP_RAN_CARRIED): on a queue of explicit width, a
// drainer that takes a task whose nice value is another pool's (its QoS is not the queue's, or
// its thread priority asks for a nice value the worker may not go to and back) gives the task
// and its slot to a record pushed into that pool and leaves the queue. The carrier runs the body
// and settles it: finished → the slot goes back (or on, as the queue's token, when work waits);
// deferred → the slot goes back; a manual-completion task not completed when its body returns
// keeps the slot until op_task_complete. Width, order and exactly-once must hold as for a body
// run by its drainer; a slot lost on the way stalls the queue, a slot given back twice lets two
// bodies of a serial queue run at once. (Tasks above a DEFAULT-width queue's class go outside the
// slots instead: OwnClassRunTests.)
//
// Which requests are carried: a QoS other than the queue's always (its class's workers run it);
// a thread priority of the queue's own class only where the process may not renice a worker
// there and back (no CAP_SYS_NICE) — with privilege the drainer renices in place. Nice values
// are compared with the runtime's table clamped to the process's floor, as in OwnClassRunTests,
// so the expectations hold with and without privilege.
//
// One serialized suite with the process to itself: it reads the nice value of every body, and
// the slot checks hold a serial queue's slot with a spinning body.
import Glibc
import OperationsCore
import Synchronization
import Testing

// ---- what the bodies see ---------------------------------------------------------------------

/// How many bodies (or tasks holding a slot) there are at once, and the most seen.
private final class WidthWatch: Sendable {
    let holders = Atomic<Int>(0)
    let most = Atomic<Int>(0)
    init() {}

    func enter() {
        let now = holders.add(1, ordering: .sequentiallyConsistent).newValue
        most.max(now, ordering: .relaxed)
    }

    func leave() { holders.subtract(1, ordering: .sequentiallyConsistent) }
}

/// A few hundred iterations of work, so that an overlap has a window to show up in.
private func briefWork(_ iterations: Int) {
    var spin = 0
    for i in 0..<iterations { spin &+= i }
    withExtendedLifetime(spin) {}
}

/// One task of the serial-order test: the order, the nice value and class its body ran at.
private final class OrderedProbe: Sendable {
    let index: Int
    let watch: WidthWatch
    let order: Locked<[Int]>
    let runs = Atomic<Int>(0)
    let nice = Atomic<Int32>(Int32.min)
    let runClass = Atomic<Int32>(-1)
    init(index: Int, watch: WidthWatch, order: Locked<[Int]>) {
        self.index = index
        self.watch = watch
        self.order = order
    }
}

private let orderedProbeBody: TaskBody = { context in
    let probe = contextObject(context, as: OrderedProbe.self)
    probe.watch.enter()
    probe.runs.add(1, ordering: .relaxed)
    probe.nice.store(op_current_thread_nice(), ordering: .relaxed)
    probe.runClass.store(Int32(op_current_thread_qos().rawValue), ordering: .relaxed)
    probe.order.withLock { $0.append(probe.index) }
    briefWork(500)
    probe.watch.leave()
}

/// One task of the manual-completion, deferral and release tests: how often its body ran and
/// its task finished, and what it does: completes later (from the test's thread) or defers
/// itself on its first run (the test unholds it once that returned).
private final class SlotProbe: Sendable {
    let watch: WidthWatch
    let completesLater: Bool
    let defersOnce: Bool
    /// A manual-completion body leaves `watch` only when the test completes it (its slot is
    /// held until then): the test calls `watch.leave()` right before op_task_complete. Off
    /// where cancellation may retire a task the test cannot tell has a body (the race rounds).
    let holdsUntilCompleted: Bool
    let runs = Atomic<Int>(0)
    let started = Latch()
    let finishes = Atomic<Int>(0)
    /// Set (and `deferredLatch` opened) once op_task_defer returned in the first run.
    let deferred = Atomic<Bool>(false)
    let deferredLatch = Latch()
    /// Set (and `returnedLatch` opened) as the last thing the body of a manual-completion task
    /// does.
    let bodyReturned = Atomic<Bool>(false)
    let returnedLatch = Latch()
    init(watch: WidthWatch, completesLater: Bool = false, defersOnce: Bool = false, holdsUntilCompleted: Bool = true) {
        self.watch = watch
        self.completesLater = completesLater
        self.defersOnce = defersOnce
        self.holdsUntilCompleted = holdsUntilCompleted
    }

    /// Runs of the body a task of this kind has when it was not cancelled.
    var runsWhenNotCancelled: Int { defersOnce ? 2 : 1 }
}

private let slotProbeBody: TaskBody = { context in
    let probe = contextObject(context, as: SlotProbe.self)
    probe.watch.enter()
    let run = probe.runs.add(1, ordering: .relaxed).newValue
    probe.started.arrive()
    briefWork(Int.random(in: 0..<2000))
    if probe.defersOnce && run == 1 {
        #expect(op_task_defer(op_task_current()!) == 0)
        probe.watch.leave()
        probe.deferred.store(true, ordering: .releasing)
        probe.deferredLatch.open()
        return
    }
    if !(probe.completesLater && probe.holdsUntilCompleted) { probe.watch.leave() }
    if probe.completesLater {
        probe.bodyReturned.store(true, ordering: .releasing)
        probe.returnedLatch.open()
    }
}

private let slotProbeFinished: TaskBody = { context in
    contextObject(context, as: SlotProbe.self).finishes.add(1, ordering: .relaxed)
}

/// A body that spins until released (at most Limits.waitNs): it holds its slot without
/// sleeping, so the blocked-worker monitor never lends it.
private final class Spinner: Sendable {
    let started = Latch()
    let release = Atomic<Bool>(false)
    init() {}
}

private let spinnerBody: TaskBody = { context in
    let spinner = contextObject(context, as: Spinner.self)
    spinner.started.arrive()
    let start = monotonicNs()
    while !spinner.release.load(ordering: .acquiring) && monotonicNs() - start < Limits.waitNs {
        for _ in 0..<64 { _ = spinner.release.load(ordering: .relaxed) }
    }
}

/// How far a race round got: tasks submitted (in order), body runs.
private final class RaceProgress: Sendable {
    let submitted = Atomic<Int>(0)
    let probes: [SlotProbe]
    init(_ probes: [SlotProbe]) { self.probes = probes }
    var runs: Int { probes.reduce(0) { $0 + $1.runs.load(ordering: .relaxed) } }
}

// ---- requests and helpers --------------------------------------------------------------------

/// A task's request for another nice value than its serial userInitiated queue's.
struct CarryRequest: Sendable, CustomTestStringConvertible {
    let qos: Int32
    let threadPriority: Double
    var testDescription: String {
        let name = qos == OP_QOS_INHERIT ? "inherited" : qosName(op_qos_t(rawValue: UInt32(qos)))
        return "\(name) at thread priority \(threadPriority)"
    }

    /// Classes below the queue's (a class above a serial queue's raises the queue, QoS
    /// promotion, and then runs on the raised queue's own drainer: not carried), with and
    /// without a thread priority, and the queue's own class with a thread priority (carried only
    /// where the process may not renice and back).
    static let all: [CarryRequest] = [
        CarryRequest(qos: qosAttr(OP_QOS_BACKGROUND), threadPriority: 0.5),
        CarryRequest(qos: qosAttr(OP_QOS_UTILITY), threadPriority: 0.5),
        CarryRequest(qos: qosAttr(OP_QOS_DEFAULT), threadPriority: 0.0),
        CarryRequest(qos: qosAttr(OP_QOS_DEFAULT), threadPriority: 1.0),
        CarryRequest(qos: OP_QOS_INHERIT, threadPriority: 1.0),
    ]
}

/// The nice value a body of class `qos` at `threadPriority` runs at: the runtime's table plus
/// the thread priority's offset, never below what the process may go to.
private func expectedNice(_ qos: op_qos_t, _ threadPriority: Double) -> Int32 {
    max(op_runtime_nice_for(qos, threadPriority), op_runtime_nice_floor())
}

/// Polls until `done` or `deadline` (monotonicNs); false on timeout. For waits on tasks whose
/// class the test reads: a wait that sleeps raises what it waits for to the waiting thread's
/// class (QoS promotion).
private func pollUntil(_ deadline: Int64, _ done: () -> Bool) -> Bool {
    while !done() {
        if monotonicNs() > deadline { return false }
        sleepNs(100_000)
    }
    return true
}

@Suite(.needsQuietProcess, .serialized) struct CarryTests {
    /// The class of the serial queues of the manual-completion and deferral tests: the requests
    /// (CarryRequest.all) are at or below it.
    private let queueClass = OP_QOS_USER_INITIATED

    /// A serial queue (of a class above background) still runs one body at a time, and its slot
    /// is there: a carried (background) spinner holds it and a plain task does not start beside
    /// it within Limits.quietNs, then runs once the spinner returns; then a burst of tasks of
    /// the queue's class and below, at thread priorities 0.5, 1.0 and 0.0, never overlaps and
    /// all run. A slot lost stalls this (bounded waits), one given back twice lets the plain
    /// task or a burst body start beside another.
    private func expectSerialSlotWhole(_ queue: OpaquePointer, _ what: String,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let spinner = Spinner()
        let holder = try makeTask(spinnerBody, contextPointer(spinner), qos: qosAttr(OP_QOS_BACKGROUND),
                                  sourceLocation: sourceLocation)
        defer { op_task_release(holder) }
        defer { spinner.release.store(true, ordering: .releasing) }
        #expect(op_queue_submit(queue, holder) == 0, sourceLocation: sourceLocation)
        guard spinner.started.wait(seconds: Limits.waitSeconds) else {
            Issue.record("\(what): a carried task never started on the serial queue (its slot was lost): \(queueReport(queue))",
                         sourceLocation: sourceLocation)
            return
        }
        let extra = SlotProbe(watch: WidthWatch())
        #expect(op_queue_submit_f(queue, slotProbeBody, contextPointer(extra)) == 0, sourceLocation: sourceLocation)
        #expect(!extra.started.wait(seconds: Double(Limits.quietNs) / 1e9),
                "\(what): a task started while a carried task held the serial queue's slot", sourceLocation: sourceLocation)
        spinner.release.store(true, ordering: .releasing)
        guard extra.started.wait(seconds: Limits.waitSeconds) else {
            Issue.record("\(what): the task behind the carried one never started (the slot was not given back): \(queueReport(queue))",
                         sourceLocation: sourceLocation)
            return
        }
        let watch = WidthWatch()
        let burst = (0..<120).map { _ in SlotProbe(watch: watch) }
        let classes = allQoSClasses.filter { $0.rawValue <= op_queue_qos(queue).rawValue }
        for (index, probe) in burst.enumerated() {
            let task = try makeTask(slotProbeBody, contextPointer(probe),
                                    qos: index % 4 == 0 ? OP_QOS_INHERIT : qosAttr(classes[index % classes.count]),
                                    threadPriority: [0.5, 1.0, 0.0][index % 3], sourceLocation: sourceLocation)
            #expect(op_queue_submit(queue, task) == 0, sourceLocation: sourceLocation)
            op_task_release(task)
        }
        let drained = op_queue_wait(queue, Limits.waitNs)
        #expect(drained == 0, "\(what): the burst did not drain: \(errnoName(drained)), \(queueReport(queue))",
                sourceLocation: sourceLocation)
        let ran = burst.filter { $0.runs.load(ordering: .relaxed) == 1 }.count
        #expect(ran == burst.count, "\(what): \(ran) of \(burst.count) burst bodies ran once", sourceLocation: sourceLocation)
        #expect(watch.most.load(ordering: .relaxed) <= 1,
                "\(what): the serial queue ran \(watch.most.load(ordering: .relaxed)) burst bodies at once",
                sourceLocation: sourceLocation)
    }

    /// Tasks that alternate their class (userInitiated, background, default, utility) and
    /// their thread priority (0.0, 1.0, 0.5) on a serial queue: every body runs exactly once,
    /// never two at once, in submission order, each at the nice value of the class it runs at
    /// (op_current_thread_qos) moved by its thread priority. On a userInitiated queue none is
    /// above the queue's class, so each runs at its own class and every task of another class
    /// or thread priority is carried with the slot. On a utility queue (the case as an
    /// application writes it) the userInitiated and default tasks raise the serial queue (QoS
    /// promotion) until they finished, so what is ahead of them runs at their class on the
    /// raised queue's drainers: a body runs at its own class or above. Then each combination
    /// alone, after the one before finished: at its own class's value (a lone background task
    /// is carried from either queue).
    /// A task carried to another class's workers (background tasks on a userInitiated serial
    /// queue) counts once in the workers' `tasks`, where its body runs: the drainer that carries
    /// it away begins a body for it (the monitor and promoters see it) but counts nothing. Found
    /// by review: counted by both, such tasks were counted twice.
    @Test func aCarriedTaskCountsOnceInTheWorkersTasks() throws {
        let queue = try makeQueue("carry-count", qos: queueClass, width: 1)
        defer { op_queue_release(queue) }
        var before = op_runtime_counters_t()
        #expect(op_runtime_counters(&before) == 0)
        let count = 64
        for _ in 0..<count {
            let task = try makeTask(emptyBody, nil, qos: qosAttr(OP_QOS_BACKGROUND))
            #expect(op_queue_submit(queue, task) == 0)
            op_task_release(task)
        }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        var after = op_runtime_counters_t()
        #expect(op_runtime_counters(&after) == 0)
        #expect(after.carries - before.carries >= UInt64(count), "the tasks were not carried: \(after.carries - before.carries) carries")
        #expect(after.tasks - before.tasks == UInt64(count), "\(count) carried tasks counted as \(after.tasks - before.tasks)")
    }

    @Test(arguments: [OP_QOS_USER_INITIATED, OP_QOS_UTILITY])
    func aSerialQueueRunsCarriedTasksOnceEachInOrderAtTheirNiceValues(_ queueQoS: op_qos_t) throws {
        let classes = [OP_QOS_USER_INITIATED, OP_QOS_BACKGROUND, OP_QOS_DEFAULT, OP_QOS_UTILITY]
        let threadPriorities = [0.0, 1.0, 0.5]
        let queue = try makeQueue("carry-serial-order", qos: queueQoS, width: 1)
        defer { op_queue_release(queue) }
        let watch = WidthWatch()
        let order = Locked<[Int]>([])

        // A burst, submitted while suspended: every raise is made before a body starts.
        let count = 96
        let probes = (0..<count).map { OrderedProbe(index: $0, watch: watch, order: order) }
        let tasks = try probes.map { probe in
            try makeTask(orderedProbeBody, contextPointer(probe), qos: qosAttr(classes[probe.index % 4]),
                         threadPriority: threadPriorities[probe.index % 3])
        }
        defer { tasks.forEach { op_task_release($0) } }
        op_queue_set_suspended(queue, true)
        for task in tasks { #expect(op_queue_submit(queue, task) == 0) }
        op_queue_set_suspended(queue, false)
        let drained = pollUntil(monotonicNs() + Limits.waitNs) { op_queue_unfinished(queue) == 0 }
        let ranCount = order.withLock { $0.count }
        #expect(drained, "the serial \(qosName(queueQoS)) queue did not drain: \(ranCount) of \(count) bodies ran; \(queueReport(queue))")
        #expect(watch.most.load(ordering: .relaxed) <= 1,
                "the serial queue ran \(watch.most.load(ordering: .relaxed)) bodies at once")
        let ranOrder = order.withLock { $0 }
        #expect(ranOrder == Array(0..<ranCount), "bodies ran out of submission order: \(ranOrder)")
        // A class above the queue's raises it: what is ahead runs at the raised class.
        let raises = classes.contains { $0.rawValue > queueQoS.rawValue }
        var wrong: [String] = []
        for (index, probe) in probes.enumerated() {
            let runs = probe.runs.load(ordering: .relaxed)
            let own = classes[index % 4]
            let threadPriority = threadPriorities[index % 3]
            let what = "task \(index) (\(qosName(own)) at thread priority \(threadPriority))"
            if drained ? runs != 1 : runs > 1 { wrong.append("\(what) ran \(runs) times") }
            if op_task_runs_outside_width(tasks[index]) { wrong.append("\(what) ran outside the explicit width") }
            guard runs == 1 else { continue }
            let ranAt = op_qos_t(rawValue: UInt32(probe.runClass.load(ordering: .relaxed)))
            let nice = probe.nice.load(ordering: .relaxed)
            if raises ? ranAt.rawValue < own.rawValue : ranAt != own {
                wrong.append("\(what) ran at \(qosName(ranAt))")
            }
            if nice != expectedNice(ranAt, threadPriority) {
                wrong.append("\(what) ran at \(qosName(ranAt)) at nice \(nice), not \(expectedNice(ranAt, threadPriority))")
            }
        }
        #expect(wrong.isEmpty, "on a serial \(qosName(queueQoS)) queue:\n\(wrong.joined(separator: "\n"))")
        guard drained else { return }

        // Each combination alone, after the one before finished: it runs at its own class.
        for own in classes {
            for threadPriority in threadPriorities {
                let probe = OrderedProbe(index: -1, watch: watch, order: order)
                let task = try makeTask(orderedProbeBody, contextPointer(probe), qos: qosAttr(own),
                                        threadPriority: threadPriority)
                defer { op_task_release(task) }
                #expect(op_queue_submit(queue, task) == 0)
                guard pollUntil(monotonicNs() + Limits.waitNs, { op_task_is_finished(task) }) else {
                    Issue.record("a lone \(qosName(own)) task at thread priority \(threadPriority) did not finish on a serial \(qosName(queueQoS)) queue (a slot lost?): \(queueReport(queue))")
                    return
                }
                let ranAt = op_qos_t(rawValue: UInt32(probe.runClass.load(ordering: .relaxed)))
                let nice = probe.nice.load(ordering: .relaxed)
                #expect(probe.runs.load(ordering: .relaxed) == 1)
                #expect(ranAt == own, "a lone \(qosName(own)) task ran at \(qosName(ranAt))")
                #expect(nice == expectedNice(own, threadPriority),
                        "a lone \(qosName(own)) task at thread priority \(threadPriority) ran at nice \(nice), not \(expectedNice(own, threadPriority))")
            }
        }
        #expect(watch.most.load(ordering: .relaxed) <= 1, "the serial queue ran two lone bodies at once")
        try expectSerialSlotWhole(queue, "after the carried tasks on a serial \(qosName(queueQoS)) queue")
    }

    /// A carried manual-completion task keeps the serial queue's slot after its body returned:
    /// the task behind it does not start (watched for Limits.quietNs) until the test completes
    /// it; then it runs, the queue drains, on_finish ran once, and the slot is whole.
    @Test(arguments: CarryRequest.all)
    func aCarriedManualCompletionTaskKeepsTheSlotUntilCompleted(_ request: CarryRequest) throws {
        let queue = try makeQueue("carry-manual", qos: queueClass, width: 1)
        defer { op_queue_release(queue) }
        let watch = WidthWatch()
        let first = SlotProbe(watch: watch, completesLater: true)
        let next = SlotProbe(watch: watch)
        let task = try makeTask(slotProbeBody, contextPointer(first), qos: request.qos, threadPriority: request.threadPriority,
                                flags: UInt32(OP_TASK_MANUAL_COMPLETION), onFinish: slotProbeFinished)
        let behind = try makeTask(slotProbeBody, contextPointer(next), onFinish: slotProbeFinished)
        defer { op_task_release(task); op_task_release(behind) }
        #expect(op_queue_submit(queue, task) == 0)
        guard first.returnedLatch.wait(seconds: Limits.waitSeconds) else {
            Issue.record("the manual-completion task's body never ran: \(queueReport(queue))")
            return
        }
        #expect(op_queue_submit(queue, behind) == 0)
        #expect(!next.started.wait(seconds: Double(Limits.quietNs) / 1e9),
                "the task behind started before the carried manual-completion task was completed")
        #expect(!op_task_is_finished(task), "finished without op_task_complete")
        // A drainer that ran the body itself (a thread priority reniced in place) holds credit
        // units until it leaves the queue: the count settles at 2 soon after.
        let settleBy = monotonicNs() + Limits.waitNs
        while op_queue_unfinished(queue) != 2 && monotonicNs() < settleBy { sched_yield() }
        #expect(op_queue_unfinished(queue) == 2, "unfinished: \(op_queue_unfinished(queue)): \(queueReport(queue))")
        #expect(first.finishes.load(ordering: .relaxed) == 0)
        watch.leave()
        #expect(op_task_complete(task) == 0)
        #expect(next.started.wait(seconds: Limits.waitSeconds),
                "the task behind never started after the completion (the slot was not given back): \(queueReport(queue))")
        let drained = op_queue_wait(queue, Limits.waitNs)
        #expect(drained == 0, "the queue did not drain: \(errnoName(drained)), \(queueReport(queue))")
        guard drained == 0 else { return }
        #expect(first.runs.load(ordering: .relaxed) == 1 && next.runs.load(ordering: .relaxed) == 1)
        #expect(first.finishes.load(ordering: .relaxed) == 1, "on_finish ran \(first.finishes.load(ordering: .relaxed)) times")
        #expect(next.finishes.load(ordering: .relaxed) == 1)
        #expect(op_task_complete(task) == EALREADY)
        #expect(!op_task_runs_outside_width(task))
        #expect(watch.most.load(ordering: .relaxed) <= 1, "two bodies (or holders) of the serial queue at once")
        try expectSerialSlotWhole(queue, "after a completed carried manual-completion task")
    }

    /// A carried task that defers itself gives the slot back: the task behind it runs while it
    /// is held; unheld, it runs again; the queue drains, and the slot is whole.
    @Test(arguments: CarryRequest.all)
    func aCarriedTaskThatDefersGivesBackTheSlotAndRunsAgainWhenUnheld(_ request: CarryRequest) throws {
        let queue = try makeQueue("carry-defer", qos: queueClass, width: 1)
        defer { op_queue_release(queue) }
        let watch = WidthWatch()
        let deferring = SlotProbe(watch: watch, defersOnce: true)
        let next = SlotProbe(watch: watch)
        let task = try makeTask(slotProbeBody, contextPointer(deferring), qos: request.qos,
                                threadPriority: request.threadPriority, onFinish: slotProbeFinished)
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_queue_submit_f(queue, slotProbeBody, contextPointer(next)) == 0)
        guard deferring.deferredLatch.wait(seconds: Limits.waitSeconds) else {
            Issue.record("the carried task never ran: \(queueReport(queue))")
            return
        }
        #expect(next.started.wait(seconds: Limits.waitSeconds),
                "the task behind did not run while the carried one was deferred (its slot was not given back): \(queueReport(queue))")
        #expect(!op_task_is_finished(task), "the deferred task finished")
        #expect(deferring.runs.load(ordering: .relaxed) == 1, "the held task ran again")
        #expect(!deferring.started.wait(for: 2, seconds: Double(Limits.quietNs) / 1e9),
                "the deferred task ran again while held")
        op_task_unhold(task)
        #expect(deferring.started.wait(for: 2, seconds: Limits.waitSeconds),
                "the unheld task never ran again: \(queueReport(queue))")
        let drained = op_queue_wait(queue, Limits.waitNs)
        #expect(drained == 0, "the queue did not drain: \(errnoName(drained)), \(queueReport(queue))")
        guard drained == 0 else { return }
        #expect(deferring.runs.load(ordering: .relaxed) == 2 && next.runs.load(ordering: .relaxed) == 1)
        #expect(deferring.finishes.load(ordering: .relaxed) == 1)
        #expect(!op_task_runs_outside_width(task))
        #expect(watch.most.load(ordering: .relaxed) <= 1, "two bodies of the serial queue at once")
        try expectSerialSlotWhole(queue, "after a carried task deferred and ran again")
    }

    /// Seeded rounds: a width-2 queue released right after many tasks of mixed classes and
    /// thread priorities were submitted (most carried with a slot), some manual-completion tasks
    /// (completed from the test's thread once their body returned), some deferring once (unheld
    /// once deferred). Every task finishes (op_task_wait, one deadline for the round), each body
    /// ran exactly once (a deferring one twice), on_finish once, and never more than two tasks
    /// held the queue's slots at once (a manual-completion task holds its slot until completed).
    @Test func aReleasedQueueFinishesEveryCarriedTask() throws {
        var random = SeededGenerator("aReleasedQueueFinishesEveryCarriedTask")
        let seed = random.seed
        let threadPriorities = [0.0, 0.5, 1.0]
        for round in 0..<scaled(30, tsan: 10) {
            let queue = try makeQueue("carry-released", qos: [OP_QOS_BACKGROUND, OP_QOS_UTILITY, OP_QOS_DEFAULT].randomElement(using: &random)!,
                                      width: 2)
            let watch = WidthWatch()
            let count = Int.random(in: 30...90, using: &random)
            let probes = (0..<count).map { _ in
                let kind = Int.random(in: 0..<5, using: &random)
                return SlotProbe(watch: watch, completesLater: kind == 0, defersOnce: kind == 1)
            }
            let tasks = try probes.map { probe in
                try makeTask(slotProbeBody, contextPointer(probe),
                             qos: Int.random(in: 0..<6, using: &random) == 0 ? OP_QOS_INHERIT : qosAttr(allQoSClasses.randomElement(using: &random)!),
                             threadPriority: threadPriorities.randomElement(using: &random)!,
                             flags: probe.completesLater ? UInt32(OP_TASK_MANUAL_COMPLETION) : 0, onFinish: slotProbeFinished)
            }
            for task in tasks { #expect(op_queue_submit(queue, task) == 0) }
            op_queue_release(queue)

            let deadline = monotonicNs() + Limits.waitNs
            var pending = Set(probes.indices.filter { probes[$0].completesLater })
            var deferring = Set(probes.indices.filter { probes[$0].defersOnce })
            _ = pollUntil(deadline) {
                for index in pending where probes[index].bodyReturned.load(ordering: .acquiring) {
                    watch.leave() // its slot goes back with the completion
                    #expect(op_task_complete(tasks[index]) == 0)
                    pending.remove(index)
                }
                for index in deferring where probes[index].deferred.load(ordering: .acquiring) {
                    op_task_unhold(tasks[index])
                    deferring.remove(index)
                }
                return pending.isEmpty && deferring.isEmpty
            }
            #expect(pending.isEmpty, "seed \(seed), round \(round): manual-completion tasks \(pending.sorted()) never ran")
            #expect(deferring.isEmpty, "seed \(seed), round \(round): deferring tasks \(deferring.sorted()) never ran")
            var unfinished: [Int] = []
            for (index, task) in tasks.enumerated() {
                if op_task_wait(task, max(0, deadline - monotonicNs())) != 0 { unfinished.append(index) }
            }
            #expect(unfinished.isEmpty, "seed \(seed), round \(round): tasks \(unfinished) of \(count) did not finish")
            for (index, probe) in probes.enumerated() where !unfinished.contains(index) {
                let runs = probe.runs.load(ordering: .relaxed)
                #expect(runs == probe.runsWhenNotCancelled,
                        "seed \(seed), round \(round): task \(index) ran \(runs) times, not \(probe.runsWhenNotCancelled)")
                #expect(probe.finishes.load(ordering: .relaxed) == 1,
                        "seed \(seed), round \(round): task \(index)'s on_finish ran \(probe.finishes.load(ordering: .relaxed)) times")
                #expect(!op_task_runs_outside_width(tasks[index]))
            }
            #expect(watch.most.load(ordering: .relaxed) <= 2,
                    "seed \(seed), round \(round): \(watch.most.load(ordering: .relaxed)) tasks held a width-2 queue's slots at once")
            if !(pending.isEmpty && deferring.isEmpty && unfinished.isEmpty) {
                // Left as they are: a task still running may not find its context freed.
                return
            }
            tasks.forEach { op_task_release($0) }
        }
    }

    /// Seeded rounds on queues of explicit width 1 or 2 (every task of another class or thread
    /// priority carried with a slot): one thread submits, one suspends and resumes the queue,
    /// switches its width between 1 and 2, cancels and re-bands tasks, and one completes the
    /// manual-completion tasks once their body returned (or they were cancelled) and unholds
    /// the deferring ones once deferred, all at once. Every task ends finished, each body ran at
    /// most once (a deferring one twice; exactly that unless cancelled), never more bodies ran at
    /// once than the widest width set in the round (a lower width does not stop running
    /// bodies), and the queue drains. Under the race-window build the windows in carry.c and
    /// the hand-off open between the claim, the carry and the settle.
    @Test func carriedTasksRaceWithSuspensionWidthCancellationAndCompletion() throws {
        var random = SeededGenerator("carriedTasksRaceWithSuspensionWidthCancellationAndCompletion")
        let seed = random.seed
        let threadPriorities = [0.0, 0.5, 1.0]
        let rounds = scaled(80, tsan: 20)
        for round in 0..<rounds {
            let initialWidth = Int32.random(in: 1...2, using: &random)
            let queue = try makeQueue("carry-race", qos: [OP_QOS_UTILITY, OP_QOS_DEFAULT, OP_QOS_USER_INITIATED].randomElement(using: &random)!,
                                      width: initialWidth)
            let watch = WidthWatch()
            let count = Int.random(in: 20...80, using: &random)
            let probes = (0..<count).map { _ in
                let kind = Int.random(in: 0..<6, using: &random)
                return SlotProbe(watch: watch, completesLater: kind == 0, defersOnce: kind == 1, holdsUntilCompleted: false)
            }
            let tasks = try probes.map { probe in
                try makeTask(slotProbeBody, contextPointer(probe),
                             qos: Int.random(in: 0..<6, using: &random) == 0 ? OP_QOS_INHERIT : qosAttr(allQoSClasses.randomElement(using: &random)!),
                             threadPriority: threadPriorities.randomElement(using: &random)!,
                             flags: probe.completesLater ? UInt32(OP_TASK_MANUAL_COMPLETION) : 0, onFinish: slotProbeFinished)
            }
            let cancelled = Set((0..<count).filter { _ in Int.random(in: 0..<8, using: &random) == 0 })
            // 0: suspend, 1: resume, 2: width 1, 3: width 2.
            let actions = (0..<24).map { _ in Int.random(in: 0..<4, using: &random) }
            let finalWidth = Int32.random(in: 1...2, using: &random)
            let widest = Int(max(initialWidth, finalWidth, actions.contains(3) ? 2 : 1))
            let disturberSeed = random.next()
            let handle = SendablePointer(queue)
            let taskHandles = tasks.map { SendablePointer($0) }
            let progress = RaceProgress(probes)
            let deadline = monotonicNs() + Limits.waitNs
            let leftOver = Locked<(pending: [Int], deferring: [Int])>(([], []))
            let ended = runThreads(3, seconds: Limits.waitSeconds + 5) { role in
                let queue = handle.raw
                switch role {
                case 0: // submits
                    for (index, task) in taskHandles.enumerated() {
                        #expect(op_queue_submit(queue, task.raw) == 0)
                        progress.submitted.store(index + 1, ordering: .releasing)
                    }
                case 1: // disturbs, paced by the submissions and the runs (each step waits at most 2 ms)
                    var local = SeededGenerator(seed: disturberSeed)
                    for (step, action) in actions.enumerated() {
                        let target = (step + 1) * 2 * count / (actions.count + 1)
                        _ = pollUntil(monotonicNs() + 2_000_000) {
                            progress.submitted.load(ordering: .acquiring) + progress.runs >= target
                        }
                        switch action {
                        case 0: op_queue_set_suspended(queue, true)
                        case 1: op_queue_set_suspended(queue, false)
                        case 2: op_queue_set_width(queue, 1)
                        default: op_queue_set_width(queue, 2)
                        }
                        let available = progress.submitted.load(ordering: .acquiring)
                        for index in cancelled where index < available && Int.random(in: 0..<4, using: &local) == 0 {
                            op_task_cancel(taskHandles[index].raw)
                        }
                        for _ in 0..<3 where available > 0 {
                            let index = Int.random(in: 0..<available, using: &local)
                            _ = op_task_set_priority(taskHandles[index].raw, op_priority_t(UInt32.random(in: 0..<5, using: &local)))
                        }
                    }
                    op_queue_set_width(queue, finalWidth)
                    op_queue_set_suspended(queue, false)
                default: // completes and unholds
                    var pending = Set(probes.indices.filter { probes[$0].completesLater })
                    var deferring = Set(probes.indices.filter { probes[$0].defersOnce })
                    _ = pollUntil(deadline) {
                        let available = progress.submitted.load(ordering: .acquiring)
                        for index in pending where index < available {
                            let task = taskHandles[index].raw
                            if probes[index].bodyReturned.load(ordering: .acquiring) || op_task_is_cancelled(task) {
                                _ = op_task_complete(task) // EALREADY for one cancelled and retired meanwhile
                                pending.remove(index)
                            }
                        }
                        for index in deferring where index < available {
                            if probes[index].deferred.load(ordering: .acquiring) {
                                op_task_unhold(taskHandles[index].raw)
                                deferring.remove(index)
                            } else if op_task_is_finished(taskHandles[index].raw) && probes[index].runs.load(ordering: .acquiring) == 0 {
                                deferring.remove(index) // cancelled before it ran
                            }
                        }
                        return pending.isEmpty && deferring.isEmpty
                    }
                    leftOver.withLock { $0 = (pending.sorted(), deferring.sorted()) }
                }
            }
            #expect(ended, "seed \(seed), round \(round): the submitting, disturbing or completing thread did not end")
            let (pending, deferring) = leftOver.withLock { $0 }
            #expect(pending.isEmpty, "seed \(seed), round \(round): manual-completion tasks \(pending) never ran")
            #expect(deferring.isEmpty, "seed \(seed), round \(round): deferring tasks \(deferring) never ran")
            for index in cancelled { op_task_cancel(tasks[index]) }
            for index in pending { _ = op_task_complete(tasks[index]) }
            let drained = op_queue_wait(queue, max(0, deadline - monotonicNs()))
            #expect(drained == 0, "seed \(seed), round \(round): the queue did not drain: \(errnoName(drained)), \(queueReport(queue))")
            var wrong: [String] = []
            for (index, probe) in probes.enumerated() {
                let runs = probe.runs.load(ordering: .relaxed)
                let expected = probe.runsWhenNotCancelled
                if !op_task_is_finished(tasks[index]) { wrong.append("task \(index) did not finish (ran \(runs) times)") }
                if runs > expected || (runs != expected && !cancelled.contains(index)) {
                    wrong.append("task \(index) ran \(runs) times, not \(expected)\(cancelled.contains(index) ? " (cancelled: at most)" : "")")
                }
                if op_task_runs_outside_width(tasks[index]) { wrong.append("task \(index) ran outside the explicit width") }
            }
            #expect(wrong.isEmpty, "seed \(seed), round \(round), \(count) tasks:\n\(wrong.joined(separator: "\n"))")
            let most = watch.most.load(ordering: .relaxed)
            #expect(most <= widest, "seed \(seed), round \(round): \(most) bodies ran at once on a queue never wider than \(widest)")
            #expect(op_queue_unfinished(queue) == 0)
            if drained != 0 || !ended { return } // left as they are: a task may still run
            tasks.forEach { op_task_release($0) }
            op_queue_release(queue)
        }
    }
}
