// LivenessRaceTests.swift — races between the core's publication points that real code hits
// rarely and that end in a task run twice, a freed task or queue, or a count that never drains.
// Each test names its pattern; each repeats the race many times with both sides released at the
// same moment, and the AddressSanitizer run in CI turns a use after free into a failure. The
// race-window build (OPERATIONS_RACE_WINDOWS, see CShims/OperationsCore/base/race_window.c and OP_RACE_WINDOW in base/base.h) widens
// the windows these tests aim at.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// Two threads meet at each round's start: both spin until both arrived (bounded).
private final class RoundMeeting: Sendable {
    private let arrivals = Atomic<Int>(0)
    /// Arrives for `round` (0, 1, 2, …) and waits for the other side; false on timeout.
    func meet(round: Int, deadline: Int64) -> Bool {
        arrivals.add(1, ordering: .sequentiallyConsistent)
        while arrivals.load(ordering: .sequentiallyConsistent) < 2 * (round + 1) {
            if monotonicNs() > deadline { return false }
        }
        return true
    }
}

/// What the completer thread of the hand-off race completes.
private final class CompletionMailbox: Sendable {
    let task = Atomic<Int>(0)
    let completed = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
}

/// Body: hands its own task to the completer thread, which completes it at once (while this
/// worker is still in the hand-off that follows the body).
private let handToCompleterBody: TaskBody = { context in
    let mailbox = contextObject(context, as: CompletionMailbox.self)
    let task = op_task_current()!
    mailbox.task.store(Int(bitPattern: UnsafeRawPointer(task)), ordering: .releasing)
}

/// State of the stranding test: the body's queue, how it moves it, and the tasks it released.
private final class MoveWhileBlocked: @unchecked Sendable {
    let queue: OpaquePointer
    let byPlacement: Bool
    let released = Latch()
    let bodyDone = Latch()
    let count = 8
    let allRan = Atomic<Bool>(false)
    init(queue: OpaquePointer, byPlacement: Bool) {
        self.queue = queue
        self.byPlacement = byPlacement
    }
}

private let arriveBody: TaskBody = { context in
    contextObject(context, as: MoveWhileBlocked.self).released.arrive()
}

/// Releases tasks into its worker's local run queue, moves its queue to another class (or CPU
/// set), then blocks where the core cannot see until every released task ran.
private let moveThenBlockBody: TaskBody = { context in
    let state = contextObject(context, as: MoveWhileBlocked.self)
    for _ in 0..<state.count { op_queue_submit_f(state.queue, arriveBody, context) }
    if state.byPlacement {
        var cpu: Int32 = 0
        var node: Int32 = 0
        op_runtime_cpu(0, &cpu, &node)
        var list = [cpu]
        op_queue_set_cpu_list(state.queue, &list, 1, nil)
    } else {
        op_queue_set_qos(state.queue, OP_QOS_UTILITY)
    }
    state.allRan.store(state.released.wait(for: state.count, seconds: Limits.waitSeconds), ordering: .releasing)
    state.bodyDone.open()
}

/// The dependency that the on_finish of the task completed by hand completes in turn.
private final class CompletesDependency: @unchecked Sendable {
    var dependency: OpaquePointer?
}

private let completeDependencyOnFinish: TaskBody = { context in
    let state = contextObject(context, as: CompletesDependency.self)
    if let dependency = state.dependency { op_task_complete(dependency) }
}

@Suite(.sharesProcess) struct LivenessRaceTests {
    // Review of finding 2's fix: a manual-completion task completed by hand while a dependency
    // holds it, and that dependency finishing between the completion's FINISHED and its try for
    // QUEUED (made certain here: the task's on_finish completes the dependency). Whoever wins
    // QUEUED must enqueue the finished task so that its queue retires it; it was dropped, and the
    // queue never went idle.
    @Test func manualTaskCompletedWhileItsDependencyFinishesIsRetired() throws {
        let queue = try makeQueue("completed while readied")
        defer { op_queue_release(queue) }
        let state = CompletesDependency()
        let dependency = try makeTask(emptyBody, nil)
        let task = try makeTask(emptyBody, contextPointer(state), flags: UInt32(OP_TASK_MANUAL_COMPLETION),
                                onFinish: completeDependencyOnFinish)
        defer { op_task_release(task); op_task_release(dependency) }
        state.dependency = dependency
        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_task_complete(task) == 0)
        #expect(op_task_is_finished(dependency))
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue did not go idle: \(queueReport(queue))")
    }

    // Finding 10: a QoS or placement change while a body that released work into its worker's
    // local run queue then blocks (where the core cannot see) for that work: the queue's new
    // workers do not steal from the old pool's rings, so the work was stranded there.
    @Test(arguments: [false, true])
    func queueMovedWhileBodyBlocksOnItsReleasedWorkDoesNotStrandIt(byPlacement: Bool) throws {
        let queue = try makeQueue(byPlacement ? "placed while blocked" : "QoS moved while blocked")
        defer { op_queue_release(queue) }
        let state = MoveWhileBlocked(queue: queue, byPlacement: byPlacement)
        let task = try makeTask(moveThenBlockBody, contextPointer(state))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        #expect(state.bodyDone.wait(seconds: Limits.waitSeconds + 5), "the blocked body did not return")
        let allRan = state.allRan.load(ordering: .acquiring)
        #expect(allRan, "tasks its body released were stranded after the move (\(state.released.arrivals)/\(state.count) ran)")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }

    // Finding 4: cancel() racing addOperation. SUBMITTED was published before the queue's task
    // reference and busy unit were taken, so a cancel in between made the task ready, a worker
    // retired it and dropped references the queue did not hold yet (a freed task, a body run
    // twice, `busy` below zero and a queue that never drained).
    @Test func cancelRacingSubmitRetiresTaskOnce() throws {
        let rounds = runningUnderSanitizer ? 400 : 3000
        let queue = try makeQueue("cancel-submit race")
        defer { op_queue_release(queue) }
        let counters = Counters()
        var tasks: [SendablePointer] = []
        for _ in 0..<rounds {
            tasks.append(SendablePointer(try makeTask(countRun, contextPointer(counters), onFinish: countFinish)))
        }
        defer { tasks.forEach { op_task_release($0.raw) } }
        let meeting = RoundMeeting()
        let handle = SendablePointer(queue)
        let taskList = tasks
        let deadline = monotonicNs() + Limits.waitNs
        let submitResults = Atomic<Int>(0)
        let met = runThreads(2) { side in
            for round in 0..<rounds {
                guard meeting.meet(round: round, deadline: deadline) else { return }
                if side == 0 {
                    if op_queue_submit(handle.raw, taskList[round].raw) == 0 { submitResults.add(1, ordering: .relaxed) }
                } else {
                    op_task_cancel(taskList[round].raw)
                }
            }
        }
        #expect(met, "the two racing threads did not finish their rounds")
        #expect(submitResults.load(ordering: .relaxed) == rounds, "every submit succeeded")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0, "the queue drained")
        #expect(op_queue_unfinished(queue) == 0)
        #expect(counters.finished.load(ordering: .relaxed) == rounds, "on_finish ran \(counters.finished.load(ordering: .relaxed)) times for \(rounds) tasks")
        #expect(counters.ran.load(ordering: .relaxed) <= rounds, "bodies ran \(counters.ran.load(ordering: .relaxed)) times for \(rounds) tasks")
        for task in tasks { #expect(op_task_is_finished(task.raw)) }
    }

    // Finding 5: a manual-completion task (an asynchronous operation) completed on another thread
    // while its worker is still in the hand-off after the body, on a queue whose last handle was
    // dropped: the completion may take the queue idle, and the queue was freed under the worker.
    @Test func manualCompletionOnAnotherThreadDuringHandOffOfDroppedQueue() throws {
        let rounds = runningUnderSanitizer ? 300 : 2000
        let mailbox = CompletionMailbox()
        let deadline = monotonicNs() + Limits.waitNs
        let completer = onNewThread {
            while !mailbox.stop.load(ordering: .acquiring) && monotonicNs() < deadline {
                let raw = mailbox.task.exchange(0, ordering: .acquiringAndReleasing)
                guard raw != 0, let task = OpaquePointer(bitPattern: raw) else { continue }
                if op_task_complete(task) == 0 { mailbox.completed.add(1, ordering: .relaxed) }
            }
        }
        defer {
            mailbox.stop.store(true, ordering: .releasing)
            _ = completer.wait(seconds: Limits.waitSeconds)
        }
        let context = contextPointer(mailbox)
        for round in 0..<rounds {
            let queue = try makeQueue("hand-off race \(round)")
            let task = try makeTask(handToCompleterBody, context, flags: UInt32(OP_TASK_MANUAL_COMPLETION))
            #expect(op_queue_submit(queue, task) == 0)
            op_queue_release(queue) // the user drops the queue; its unfinished task keeps it alive
            let rc = op_task_wait(task, Limits.waitNs)
            op_task_release(task)
            guard rc == 0 else {
                Issue.record("round \(round): the task was not completed: \(errnoName(rc))")
                return
            }
        }
        // The waiter wakes inside op_task_complete, before the completer counts its success.
        #expect(eventually { mailbox.completed.load(ordering: .relaxed) == rounds },
                "\(mailbox.completed.load(ordering: .relaxed)) of \(rounds) completions succeeded")
    }

    // Finding 15: a batch racing with a submit of one of its tasks to another queue submits all
    // of its tasks or none (it returned EBUSY with part of the batch submitted).
    @Test func batchRacingSubmitOfOneOfItsTasksSubmitsAllOrNothing() throws {
        let rounds = runningUnderSanitizer ? 200 : 1000
        let queue = try makeQueue("batch race")
        let other = try makeQueue("batch race, other queue")
        defer { op_queue_release(queue); op_queue_release(other) }
        let counters = Counters()
        let meeting = RoundMeeting()
        let deadline = monotonicNs() + Limits.waitNs
        let queues = (SendablePointer(queue), SendablePointer(other))
        var batches: [[SendablePointer]] = []
        for _ in 0..<rounds {
            batches.append(try (0..<3).map { _ in SendablePointer(try makeTask(countRun, contextPointer(counters))) })
        }
        defer { batches.joined().forEach { op_task_release($0.raw) } }
        let taskLists = batches
        let batchResults = Locked<[Int32]>(Array(repeating: -1, count: rounds))
        let soloResults = Locked<[Int32]>(Array(repeating: -1, count: rounds))
        let met = runThreads(2) { side in
            for round in 0..<rounds {
                guard meeting.meet(round: round, deadline: deadline) else { return }
                let tasks = taskLists[round]
                if side == 0 {
                    let raw: [OpaquePointer?] = tasks.map { $0.raw }
                    let rc = raw.withUnsafeBufferPointer { op_queue_submit_batch(queues.0.raw, $0.baseAddress, $0.count) }
                    batchResults.withLock { $0[round] = rc }
                } else {
                    let rc = op_queue_submit(queues.1.raw, tasks[2].raw)
                    soloResults.withLock { $0[round] = rc }
                }
            }
        }
        #expect(met)
        let batch = batchResults.withLock { $0 }
        let solo = soloResults.withLock { $0 }
        var expectedRuns = 0
        for round in 0..<rounds {
            // Exactly one of the two got the contended task.
            #expect((batch[round] == 0) != (solo[round] == 0), "round \(round): batch \(errnoName(batch[round])), single submit \(errnoName(solo[round]))")
            if batch[round] == EBUSY {
                // Nothing of the batch was submitted: its other tasks can still go elsewhere.
                for task in taskLists[round].prefix(2) { #expect(op_queue_submit(other, task.raw) == 0) }
            }
            expectedRuns += 3
        }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(op_queue_wait(other, Limits.waitNs) == 0)
        #expect(counters.ran.load(ordering: .relaxed) == expectedRuns, "\(counters.ran.load(ordering: .relaxed)) bodies ran for \(expectedRuns) tasks")
    }

    // Finding 6: a width of INT_MAX with one waiting task claims one slot (it claimed one per
    // unit of width on resume, set_width and batches: billions of tokens, a hang and gigabytes).
    @Test func hugeWidthClaimsSlotsForWaitingTasksOnly() throws {
        let queue = try makeQueue("huge width", width: Int32.max)
        defer { op_queue_release(queue) }
        let counters = Counters()
        op_queue_set_suspended(queue, true)
        let one = try makeTask(countRun, contextPointer(counters))
        defer { op_task_release(one) }
        #expect(op_queue_submit(queue, one) == 0)
        #expect(op_queue_set_width(queue, Int32.max - 1) == 0)
        op_queue_set_suspended(queue, false)
        #expect(op_task_wait(one, Limits.waitNs) == 0, "one task on a resumed queue of width INT_MAX")
        var batch: [OpaquePointer?] = []
        for _ in 0..<3 { batch.append(try makeTask(countRun, contextPointer(counters))) }
        defer { batch.forEach { op_task_release($0) } }
        #expect(batch.withUnsafeBufferPointer { op_queue_submit_batch(queue, $0.baseAddress, $0.count) } == 0)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(counters.ran.load(ordering: .relaxed) == 4)
    }
    // Raising a queue's class (QoS promotion) and taking the raise off move its waiting tokens
    // between pools (op_pool_rehome_tokens), popping every token of the old pool for a moment.
    // A worker that looked for work in that moment found none and parked, and the tokens that
    // went back into the same pool were pushed with no wake-up: a serial queue's token sat there
    // with every worker parked (a stress round under ThreadSanitizer stalled for 120 s). Each
    // task here is waited for with a deadline; the race-window build widens the moment.
    @Test func raisingAQueueOverAndOverStrandsNoneOfItsTokens() throws {
        let rounds = runningUnderSanitizer ? 300 : 2000
        let queue = try makeQueue("raised over and over", width: 1)
        let other = try makeQueue("shares the pool", width: OP_WIDTH_DEFAULT)
        defer { op_queue_release(queue); op_queue_release(other) }
        let stop = Atomic<Bool>(false)
        let handle = SendablePointer(queue)
        let raiser = onNewThread {
            while !stop.load(ordering: .relaxed) {
                if op_queue_promote(handle.raw, OP_QOS_USER_INTERACTIVE) == 0 {
                    op_queue_unpromote(handle.raw, OP_QOS_USER_INTERACTIVE)
                }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            #expect(raiser.wait(seconds: Limits.waitSeconds), "the raising thread did not stop")
        }
        let counters = Counters()
        for round in 0..<rounds {
            let task = try makeTask(countRun, contextPointer(counters))
            defer { op_task_release(task) }
            #expect(op_queue_submit_f(other, { _ in }, nil) == 0) // another token in the same pool
            #expect(op_queue_submit(queue, task) == 0)
            let rc = op_task_wait(task, 5_000_000_000)
            if rc != 0 {
                var text = [CChar](repeating: 0, count: 8192)
                let length = min(op_runtime_describe(&text, text.count), text.count - 1)
                let report = String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                Issue.record("round \(round): a task of a serial queue raised and lowered over and over did not run within 5 s\n\(report)")
                return
            }
        }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        #expect(op_queue_wait(other, Limits.waitNs) == 0)
    }
}

/// The core's one-line report of a queue, for messages.
func queueReport(_ queue: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: 512)
    _ = buffer.withUnsafeMutableBufferPointer { op_queue_describe(queue, $0.baseAddress, $0.count) }
    return string(fromCBuffer: buffer)

}
