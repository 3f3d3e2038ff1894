// DependencyTests.swift — op_task_add_dependency / remove_dependency, cancellation of waiting
// tasks, and on_finish: fan-out, fan-in, a long chain, across queues, and the error codes.
import Foundation
import Glibc
import OperationsCore
import Synchronization
import Testing

/// Shared state of one dependency graph.
private final class Graph: Sendable {
    let rootDone = Atomic<Bool>(false)
    let ran = Atomic<Int>(0)
    let violations = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    let observed = Atomic<Int>(-1)
    let last = Atomic<Int>(-1)
    let sawCancelled = Atomic<Int>(0)
    let gate = Latch()
    let started = Latch()
    init() {}
}

private let rootBody: TaskBody = { context in
    let graph = contextObject(context, as: Graph.self)
    graph.ran.add(1, ordering: .relaxed)
    graph.rootDone.store(true, ordering: .releasing)
}

/// Counts a run; a violation if the root had not finished.
private let childBody: TaskBody = { context in
    let graph = contextObject(context, as: Graph.self)
    if !graph.rootDone.load(ordering: .acquiring) { graph.violations.add(1, ordering: .relaxed) }
    graph.ran.add(1, ordering: .relaxed)
}

private let sourceBody: TaskBody = { context in
    contextObject(context, as: Graph.self).ran.add(1, ordering: .releasing)
}

/// Records how many sources had run when the sink ran.
private let sinkBody: TaskBody = { context in
    let graph = contextObject(context, as: Graph.self)
    graph.observed.store(graph.ran.load(ordering: .acquiring), ordering: .relaxed)
}

private let graphFinished: TaskBody = { context in
    contextObject(context, as: Graph.self).finished.add(1, ordering: .relaxed)
}

/// A task whose on_finish holds its finish (and so the release of its dependents) until `gate`
/// opens, after waiting for its own task (which must return at once, not wait for the finish
/// that runs it).
private final class HeldFinish: @unchecked Sendable {
    let entered = Latch()
    let gate = Latch()
    let ownWait = Atomic<Int32>(-1)
    var task: OpaquePointer? // set before the task is submitted
    init() {}
}

private let heldFinish: TaskBody = { context in
    let held = contextObject(context, as: HeldFinish.self)
    held.ownWait.store(op_task_wait(held.task, Int64(OP_WAIT_FOREVER)), ordering: .relaxed)
    held.entered.open()
    _ = held.gate.wait(seconds: Limits.waitSeconds)
}

/// What one waiter saw: the dependent's unfinished dependencies when its wait returned (-2: the
/// wait failed), and whether it returned.
private final class WaitRecord: Sendable {
    let left = Atomic<Int>(-1)
    let returned = Latch()
    init() {}
}

/// An on_finish that completes `complete` (when set), then waits for `waitFor` (when set),
/// recording the wait's result, then opens `finished`.
private final class NestedFinish: @unchecked Sendable {
    var complete: OpaquePointer?
    var waitFor: OpaquePointer?
    let waitResult = Atomic<Int32>(-1)
    let finished = Latch()
    init() {}
}

private let nestedFinish: TaskBody = { context in
    let nested = contextObject(context, as: NestedFinish.self)
    if let task = nested.complete { _ = op_task_complete(task) }
    if let task = nested.waitFor {
        // Bounded: the old core returned at once here (FINISHED), the first RELEASED version
        // waited for ever.
        nested.waitResult.store(op_task_wait(task, 5_000_000_000), ordering: .relaxed)
    }
    nested.finished.open()
}

/// A manual-completion body that completes its own task (its on_finish runs inside it).
private let selfCompletingBody: TaskBody = { _ in _ = op_task_complete(op_task_current()) }

/// The order in which bodies ran, by index.
private final class OrderLog: @unchecked Sendable {
    private let lock = Lock()
    private var logged: [Int] = [] // guarded by `lock`
    func append(_ index: Int) { lock.withLock { logged.append(index) } }
    var indices: [Int] { lock.withLock { logged } }
}

/// One body's index in an `OrderLog` (its context; `contextPointer` keeps it alive).
private final class OrderEntry: @unchecked Sendable {
    let log: OrderLog
    let index: Int
    init(_ log: OrderLog, _ index: Int) { self.log = log; self.index = index }
}

private let logIndexBody: TaskBody = { context in
    let entry = contextObject(context, as: OrderEntry.self)
    entry.log.append(entry.index)
}

/// A body that logs its index, then waits (bounded) until the test opens the gate.
private final class GatedEntry: @unchecked Sendable {
    let entry: OrderEntry
    let started = Latch()
    let gate = Latch()
    init(_ entry: OrderEntry) { self.entry = entry }
}

private let gatedBody: TaskBody = { context in
    let gated = contextObject(context, as: GatedEntry.self)
    gated.entry.log.append(gated.entry.index)
    gated.started.arrive()
    _ = gated.gate.wait(seconds: Limits.waitSeconds)
}

/// A body that logs its index, then suspends its queue.
private final class SuspendingEntry: @unchecked Sendable {
    let entry: OrderEntry
    let queue: SendablePointer
    init(_ entry: OrderEntry, queue: OpaquePointer) {
        self.entry = entry
        self.queue = SendablePointer(queue)
    }
}

private let suspendingBody: TaskBody = { context in
    let suspending = contextObject(context, as: SuspendingEntry.self)
    suspending.entry.log.append(suspending.entry.index)
    op_queue_set_suspended(suspending.queue.raw, true)
}

/// Records whether the body saw itself cancelled.
private let cancelAwareBody: TaskBody = { context in
    let graph = contextObject(context, as: Graph.self)
    graph.ran.add(1, ordering: .relaxed)
    if let current = op_task_current(), op_task_is_cancelled(current) { graph.sawCancelled.add(1, ordering: .relaxed) }
}

/// Signals `started`, waits for `gate`, then records whether it was cancelled meanwhile.
private let gatedCancelAwareBody: TaskBody = { context in
    let graph = contextObject(context, as: Graph.self)
    graph.started.open()
    graph.gate.wait()
    graph.ran.add(1, ordering: .relaxed)
    if let current = op_task_current(), op_task_is_cancelled(current) { graph.sawCancelled.add(1, ordering: .relaxed) }
}

/// One link of the chain: its index and the shared Graph.
private struct ChainLink {
    var index: Int
    var graph: UnsafeMutableRawPointer
}

/// Link i must run right after link i-1: `last` goes i-1 → i.
private let chainBody: TaskBody = { context in
    let link = context!.assumingMemoryBound(to: ChainLink.self).pointee
    let graph = contextObject(link.graph, as: Graph.self)
    let (exchanged, _) = graph.last.compareExchange(expected: link.index - 1, desired: link.index,
                                                    ordering: .acquiringAndReleasing)
    if !exchanged { graph.violations.add(1, ordering: .relaxed) }
    graph.ran.add(1, ordering: .relaxed)
}

private let chainFinished: TaskBody = { context in
    let link = context!.assumingMemoryBound(to: ChainLink.self).pointee
    contextObject(link.graph, as: Graph.self).finished.add(1, ordering: .relaxed)
}

private func waitFor(_ task: OpaquePointer, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let rc = op_task_wait(task, Limits.waitNs)
    #expect(rc == 0, "\(what) did not finish within \(Limits.waitSeconds) s: \(errnoName(rc))", sourceLocation: sourceLocation)
    return rc == 0
}

private func waitFor(queue: OpaquePointer, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let rc = op_queue_wait(queue, Limits.waitNs)
    #expect(rc == 0, "\(what) did not drain within \(Limits.waitSeconds) s: \(errnoName(rc))", sourceLocation: sourceLocation)
    return rc == 0
}

@Suite(.sharesProcess)
struct DependencyTests {
    @Test func fanOutRunsAThousandChildrenOnlyAfterTheRoot() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let queue = try makeQueue("fan-out", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let root = try makeTask(rootBody, context, onFinish: graphFinished)
        let children = try (0..<1000).map { _ in try makeTask(childBody, context, onFinish: graphFinished) }
        var addFailures = 0
        for child in children where op_task_add_dependency(child, root) != 0 { addFailures += 1 }
        #expect(addFailures == 0)
        #expect(submitBatch(queue, children) == 0)
        #expect(children.allSatisfy { op_task_unfinished_dependencies($0) == 1 && !op_task_is_ready($0) })
        #expect(op_queue_submit(queue, root) == 0)

        var allFinished = waitFor(root, "root")
        for child in children where !waitFor(child, "a child") { allFinished = false; break }
        #expect(waitFor(queue: queue, "fan-out queue"))
        #expect(graph.ran.load(ordering: .relaxed) == 1001)
        #expect(graph.violations.load(ordering: .relaxed) == 0, "children ran before the root finished")
        #expect(graph.finished.load(ordering: .relaxed) == 1001, "on_finish calls: \(graph.finished.load(ordering: .relaxed)) for 1001 tasks")
        if allFinished { #expect(children.allSatisfy { op_task_is_finished($0) && op_task_unfinished_dependencies($0) == 0 }) }
        op_task_release(root)
        children.forEach { op_task_release($0) }
    }

    @Test func dependentsBecomeReadyInTheOrderTheyWereAdded() throws {
        // A finishing task releases its dependents in the order they added it, so a serial
        // queue starts them in that order (within a band): what keeps a barrier from reversing
        // what follows it (SEMANTICS Q9).
        let order = OrderLog()
        let queue = try makeQueue("serial after one root", width: 1)
        defer { op_queue_release(queue) }
        let root = try makeTask(emptyBody, nil)
        let dependents = try (0..<64).map { index in try makeTask(logIndexBody, contextPointer(OrderEntry(order, index))) }
        for dependent in dependents { #expect(op_task_add_dependency(dependent, root) == 0) }
        for dependent in dependents { #expect(op_queue_submit(queue, dependent) == 0) }
        #expect(op_queue_submit(queue, root) == 0)
        #expect(waitFor(queue: queue, "the serial queue"))
        #expect(order.indices == Array(0..<64))
        op_task_release(root)
        dependents.forEach { op_task_release($0) }
    }

    @Test func aDependentReadiedByAFinishStartsAfterOlderAndHigherPriorityTasksOfItsQueue() throws {
        // The finish hand-off runs a dependent next on the finishing worker only when a pop
        // would return it next anyway. Here the queue holds an older normal task and a veryHigh
        // one when the root finishes: a serial queue then runs veryHigh, older, dependent.
        let order = OrderLog()
        let queue = try makeQueue("serial, hand-off checks", width: 1)
        defer { op_queue_release(queue) }
        let gated = GatedEntry(OrderEntry(order, 0))
        let root = try makeTask(gatedBody, contextPointer(gated))
        let older = try makeTask(logIndexBody, contextPointer(OrderEntry(order, 1)))
        let high = try makeTask(logIndexBody, contextPointer(OrderEntry(order, 2)), priority: OP_PRIORITY_VERY_HIGH)
        let dependent = try makeTask(logIndexBody, contextPointer(OrderEntry(order, 3)))
        defer { [root, older, high, dependent].forEach { op_task_release($0) } }
        #expect(op_task_add_dependency(dependent, root) == 0)
        #expect(op_queue_submit(queue, root) == 0)
        try #require(gated.started.wait(seconds: Limits.waitSeconds), "the root never started")
        for task in [older, high, dependent] { #expect(op_queue_submit(queue, task) == 0) }
        gated.gate.open()
        #expect(waitFor(queue: queue, "the serial queue"))
        #expect(order.indices == [0, 2, 1, 3])
    }

    @Test func aDependentReadiedByAFinishWaitsWhileTheFinishSuspendedItsQueue() throws {
        // A chain on one queue whose first body suspends the queue: the dependent its finish
        // readies (handed to the finishing worker) must wait for the resume, and then run.
        for width in [Int32(1), OP_WIDTH_DEFAULT] {
            let order = OrderLog()
            let queue = try makeQueue("chain that suspends", width: width)
            defer { op_queue_release(queue) }
            let first = try makeTask(suspendingBody, contextPointer(SuspendingEntry(OrderEntry(order, 0), queue: queue)))
            let second = try makeTask(logIndexBody, contextPointer(OrderEntry(order, 1)))
            let third = try makeTask(logIndexBody, contextPointer(OrderEntry(order, 2)))
            defer { [first, second, third].forEach { op_task_release($0) } }
            #expect(op_task_add_dependency(second, first) == 0)
            #expect(op_task_add_dependency(third, second) == 0)
            for task in [first, second, third] { #expect(op_queue_submit(queue, task) == 0) }
            guard waitFor(first, "the first link") else { continue }
            quietPeriod(0.05) // the second link would start within this if the suspension were missed
            #expect(!op_task_is_executing(second) && !op_task_is_finished(second),
                    "width \(width): the second link ran while its queue was suspended")
            #expect(order.indices == [0], "width \(width)")
            op_queue_set_suspended(queue, false)
            #expect(waitFor(queue: queue, "the resumed queue"))
            #expect(order.indices == [0, 1, 2], "width \(width)")
        }
    }

    @Test func fanInSinkRunsAfterAllThousandSources() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let queue = try makeQueue("fan-in", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let sink = try makeTask(sinkBody, context, onFinish: graphFinished)
        let sources = try (0..<1000).map { _ in try makeTask(sourceBody, context, onFinish: graphFinished) }
        var addFailures = 0
        for source in sources where op_task_add_dependency(sink, source) != 0 { addFailures += 1 }
        #expect(addFailures == 0)
        #expect(op_task_unfinished_dependencies(sink) == 1000)
        #expect(op_queue_submit(queue, sink) == 0)
        #expect(submitBatch(queue, sources) == 0)

        if waitFor(sink, "sink") {
            #expect(graph.observed.load(ordering: .relaxed) == 1000,
                    "the sink ran after \(graph.observed.load(ordering: .relaxed)) of 1000 sources")
        }
        #expect(waitFor(queue: queue, "fan-in queue"))
        #expect(graph.finished.load(ordering: .relaxed) == 1001)
        op_task_release(sink)
        sources.forEach { op_task_release($0) }
    }

    /// 10^5 tasks, each depending on the one before, submitted last-first: they must run
    /// strictly in chain order (20k under ThreadSanitizer).
    @Test func longChainRunsInOrder() throws {
        let count = scaled(100_000, tsan: 50_000)
        let graph = Graph()
        let graphPointer = contextPointer(graph)
        let queue = try makeQueue("chain", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let links = UnsafeMutablePointer<ChainLink>.allocate(capacity: count)
        for index in 0..<count { (links + index).initialize(to: ChainLink(index: index, graph: graphPointer)) }
        var tasks: [OpaquePointer] = []
        tasks.reserveCapacity(count)
        for index in 0..<count { tasks.append(try makeTask(chainBody, UnsafeMutableRawPointer(links + index), onFinish: chainFinished)) }
        var addFailures = 0
        for index in 1..<count where op_task_add_dependency(tasks[index], tasks[index - 1]) != 0 { addFailures += 1 }
        #expect(addFailures == 0)
        var submitFailures = 0
        for task in tasks.reversed() where op_queue_submit(queue, task) != 0 { submitFailures += 1 }
        #expect(submitFailures == 0)

        let start = monotonicNs()
        let done = waitFor(tasks[count - 1], "the last link of a \(count)-task chain")
        let drained = waitFor(queue: queue, "chain queue")
        print("[longChainRunsInOrder] \(count) links in \(secondsSince(start)) s")
        #expect(graph.ran.load(ordering: .relaxed) == count)
        #expect(graph.last.load(ordering: .relaxed) == count - 1)
        #expect(graph.violations.load(ordering: .relaxed) == 0,
                "\(graph.violations.load(ordering: .relaxed)) links ran out of order")
        #expect(graph.finished.load(ordering: .relaxed) == count)
        tasks.forEach { op_task_release($0) }
        if done && drained { links.deallocate() }  // else leaked: a late task may still read it
    }

    @Test func dependenciesWorkAcrossQueues() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let first = try makeQueue("across-1", qos: OP_QOS_UTILITY)
        let second = try makeQueue("across-2", qos: OP_QOS_DEFAULT)
        defer { op_queue_release(first); op_queue_release(second) }
        op_queue_set_suspended(first, true)
        let root = try makeTask(rootBody, context)
        let child = try makeTask(childBody, context)
        defer { op_task_release(root); op_task_release(child) }
        #expect(op_task_add_dependency(child, root) == 0)
        #expect(op_queue_submit(first, root) == 0)
        #expect(op_queue_submit(second, child) == 0)

        sleepNs(Limits.quietNs)
        #expect(graph.ran.load(ordering: .relaxed) == 0, "the dependent ran while its dependency's queue was suspended")
        #expect(!op_task_is_finished(child))
        op_queue_set_suspended(first, false)
        if waitFor(child, "the dependent on the other queue") {
            #expect(op_task_is_finished(root))
            #expect(graph.ran.load(ordering: .relaxed) == 2)
            #expect(graph.violations.load(ordering: .relaxed) == 0, "the dependent ran before its dependency")
        }
    }

    @Test func addingAnAlreadyFinishedDependencyIsSatisfied() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let queue = try makeQueue("finished-dependency", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let dependency = try makeTask(rootBody, context)
        let task = try makeTask(childBody, context)
        defer { op_task_release(dependency); op_task_release(task) }
        #expect(op_queue_submit(queue, dependency) == 0)
        try #require(waitFor(dependency, "the dependency"))

        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_task_unfinished_dependencies(task) == 0)
        #expect(op_task_is_ready(task))
        #expect(op_queue_submit(queue, task) == 0)
        #expect(waitFor(task, "a task whose only dependency had finished"))
        #expect(graph.ran.load(ordering: .relaxed) == 2)
    }

    @Test func addDependencyErrors() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let queue = try makeQueue("dependency-errors", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let task = try makeTask(sourceBody, context)
        let unfinished = try makeTask(sourceBody, context)  // never submitted
        defer { op_task_release(task); op_task_release(unfinished) }

        #expect(op_task_add_dependency(task, task) == EINVAL, "a task depending on itself")
        #expect(op_task_add_dependency(nil, task) == EINVAL)
        #expect(op_task_add_dependency(task, nil) == EINVAL)

        // Ready (queued on a suspended queue): the dependency could not hold it back.
        op_queue_set_suspended(queue, true)
        #expect(op_queue_submit(queue, task) == 0)
        #expect(op_task_is_ready(task))
        let queued = op_task_add_dependency(task, unfinished)
        #expect(queued == EALREADY, "add_dependency on a queued task returned \(errnoName(queued))")
        #expect(op_task_unfinished_dependencies(task) == 0)

        // Finished.
        op_queue_set_suspended(queue, false)
        try #require(waitFor(task, "the task"))
        let finished = op_task_add_dependency(task, unfinished)
        #expect(finished == EALREADY, "add_dependency on a finished task returned \(errnoName(finished))")
        #expect(graph.ran.load(ordering: .relaxed) == 1)
    }

    @Test func addDependencyFromTheRunningBodyReturnsEALREADY() throws {
        final class Probe: Sendable {
            let rc = Atomic<Int32>(-1)
            let other: SendablePointer
            init(other: OpaquePointer) { self.other = SendablePointer(other) }
        }
        let other = try makeTask(emptyBody, nil)
        defer { op_task_release(other) }
        let probe = Probe(other: other)
        let queue = try makeQueue("running-add", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let task = try makeTask({ context in
            let probe = contextObject(context, as: Probe.self)
            probe.rc.store(op_task_add_dependency(op_task_current(), probe.other.raw), ordering: .relaxed)
        }, contextPointer(probe))
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        if waitFor(task, "the task") {
            let rc = probe.rc.load(ordering: .relaxed)
            #expect(rc == EALREADY, "add_dependency on a running task returned \(errnoName(rc))")
        }
    }

    @Test func removingAnUnfinishedDependencyLetsTheTaskRun() throws {
        let graph = Graph()
        let context = contextPointer(graph)
        let blocked = try makeQueue("remove-blocked", qos: OP_QOS_UTILITY)
        let open = try makeQueue("remove-open", qos: OP_QOS_UTILITY)
        defer { op_queue_release(blocked); op_queue_release(open) }
        op_queue_set_suspended(blocked, true)
        let dependency = try makeTask(sourceBody, context)
        let task = try makeTask(sourceBody, context)
        let unrelated = try makeTask(sourceBody, context)
        defer { op_task_release(dependency); op_task_release(task); op_task_release(unrelated) }
        #expect(op_queue_submit(blocked, dependency) == 0)
        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_queue_submit(open, task) == 0)
        sleepNs(Limits.quietNs)
        #expect(graph.ran.load(ordering: .relaxed) == 0, "the task ran before its dependency was removed")
        #expect(op_task_unfinished_dependencies(task) == 1)

        #expect(op_task_remove_dependency(task, unrelated) == ENOENT)
        #expect(op_task_remove_dependency(task, dependency) == 0)
        if waitFor(task, "the task after its dependency was removed") {
            #expect(!op_task_is_finished(dependency), "the dependency finished although its queue is suspended")
            #expect(graph.ran.load(ordering: .relaxed) == 1)
        }
        #expect(op_task_remove_dependency(task, dependency) == ENOENT, "removed twice")

        op_queue_set_suspended(blocked, false)
        #expect(waitFor(dependency, "the dependency after resuming"))

        // Before submission: removing the only dependency leaves nothing to wait for.
        let later = try makeTask(sourceBody, context)
        let laterDependency = try makeTask(sourceBody, context)
        defer { op_task_release(later); op_task_release(laterDependency) }
        #expect(op_task_add_dependency(later, laterDependency) == 0)
        #expect(op_task_unfinished_dependencies(later) == 1)
        #expect(op_task_remove_dependency(later, laterDependency) == 0)
        #expect(op_task_unfinished_dependencies(later) == 0)
        #expect(op_queue_submit(open, later) == 0)
        #expect(waitFor(later, "a task whose dependency was removed before submission"))
    }

    @Test func cancellingAWaitingTaskRetiresItWithoutRunningAndReleasesItsDependents() throws {
        let graph = Graph()          // the cancelled task
        let dependentGraph = Graph() // its dependent
        let blocked = try makeQueue("cancel-blocked", qos: OP_QOS_UTILITY)
        let open = try makeQueue("cancel-open", qos: OP_QOS_UTILITY)
        defer { op_queue_release(blocked); op_queue_release(open) }
        op_queue_set_suspended(blocked, true)
        let dependency = try makeTask(emptyBody, nil)
        let task = try makeTask(sourceBody, contextPointer(graph), onFinish: graphFinished)
        let dependent = try makeTask(sourceBody, contextPointer(dependentGraph), onFinish: graphFinished)
        defer { op_task_release(dependency); op_task_release(task); op_task_release(dependent) }
        #expect(op_queue_submit(blocked, dependency) == 0)
        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_task_add_dependency(dependent, task) == 0)
        #expect(op_queue_submit(open, task) == 0)
        #expect(op_queue_submit(open, dependent) == 0)
        #expect(!op_task_is_ready(task))

        op_task_cancel(task)
        #expect(op_task_is_cancelled(task))
        #expect(op_task_is_ready(task), "a cancelled task is ready")
        if waitFor(task, "the cancelled task") {
            #expect(op_task_is_finished(task))
            #expect(graph.ran.load(ordering: .relaxed) == 0, "the body of a task cancelled before it started was called")
            #expect(graph.finished.load(ordering: .relaxed) == 1, "on_finish of the cancelled task")
        }
        if waitFor(dependent, "the dependent of the cancelled task") {
            #expect(dependentGraph.ran.load(ordering: .relaxed) == 1)
            #expect(!op_task_is_finished(dependency), "its own dependency is still blocked")
        }
        op_task_cancel(task)  // idempotent

        op_queue_set_suspended(blocked, false)
        #expect(waitFor(dependency, "the blocked dependency"))
        #expect(waitFor(queue: open, "the open queue"))
        #expect(graph.ran.load(ordering: .relaxed) == 0)
        #expect(graph.finished.load(ordering: .relaxed) == 1, "on_finish must run exactly once, saw \(graph.finished.load(ordering: .relaxed))")
        #expect(dependentGraph.finished.load(ordering: .relaxed) == 1)
    }

    @Test func cancellingBeforeSubmissionRetiresWithoutRunning() throws {
        let graph = Graph()
        let queue = try makeQueue("cancel-early", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let task = try makeTask(sourceBody, contextPointer(graph), onFinish: graphFinished)
        defer { op_task_release(task) }
        op_task_cancel(task)
        #expect(!op_task_is_finished(task))
        #expect(op_queue_submit(queue, task) == 0)
        if waitFor(task, "a task cancelled before submission") {
            #expect(graph.ran.load(ordering: .relaxed) == 0)
            #expect(graph.finished.load(ordering: .relaxed) == 1)
        }
    }

    @Test func runWhenCancelledCallsTheBodyWhichSeesTheFlag() throws {
        let graph = Graph()
        let blocked = try makeQueue("rwc-blocked", qos: OP_QOS_UTILITY)
        let open = try makeQueue("rwc-open", qos: OP_QOS_UTILITY)
        defer { op_queue_release(blocked); op_queue_release(open) }
        op_queue_set_suspended(blocked, true)
        let dependency = try makeTask(emptyBody, nil)
        let task = try makeTask(cancelAwareBody, contextPointer(graph),
                                flags: UInt32(OP_TASK_RUN_WHEN_CANCELLED), onFinish: graphFinished)
        defer { op_task_release(dependency); op_task_release(task) }
        #expect(op_queue_submit(blocked, dependency) == 0)
        #expect(op_task_add_dependency(task, dependency) == 0)
        #expect(op_queue_submit(open, task) == 0)
        op_task_cancel(task)
        if waitFor(task, "a cancelled OP_TASK_RUN_WHEN_CANCELLED task") {
            #expect(graph.ran.load(ordering: .relaxed) == 1, "the body was not called")
            #expect(graph.sawCancelled.load(ordering: .relaxed) == 1, "the body did not see op_task_is_cancelled")
            #expect(graph.finished.load(ordering: .relaxed) == 1)
        }
        op_queue_set_suspended(blocked, false)
        #expect(waitFor(dependency, "the blocked dependency"))
    }

    @Test func cancellingARunningTaskDoesNotInterruptItsBody() throws {
        let graph = Graph()
        let queue = try makeQueue("cancel-running", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let task = try makeTask(gatedCancelAwareBody, contextPointer(graph), onFinish: graphFinished)
        defer { op_task_release(task) }
        #expect(op_queue_submit(queue, task) == 0)
        guard graph.started.wait() else {
            Issue.record("the body did not start within \(Limits.waitSeconds) s")
            graph.gate.open()
            return
        }
        #expect(op_task_is_executing(task))
        op_task_cancel(task)
        #expect(op_task_is_cancelled(task))
        #expect(!op_task_is_finished(task), "cancelling finished a running task")
        graph.gate.open()
        if waitFor(task, "the running cancelled task") {
            #expect(graph.ran.load(ordering: .relaxed) == 1)
            #expect(graph.sawCancelled.load(ordering: .relaxed) == 1, "the body did not see the cancel flag")
            #expect(graph.finished.load(ordering: .relaxed) == 1)
            #expect(!op_task_is_executing(task))
        }
    }

    /// op_task_wait returns once the finish is over: on_finish has run and the dependents are
    /// counted down, so a dependent started by hand right after the wait is ready (the Swift
    /// layer's D2: `waitUntilFinished()` on a queued dependency, then `start()` on the
    /// dependent, which failed "not ready" when the wait returned between the two). A wait from
    /// the task's own on_finish returns at once.
    @Test func aWaitReturnsOnceTheDependentsAreCountedDown() throws {
        let held = HeldFinish()
        let queue = try makeQueue("held-finish")
        defer { op_queue_release(queue) }
        let task = try makeTask(emptyBody, contextPointer(held), onFinish: heldFinish)
        held.task = task
        let dependent = try makeTask(emptyBody, nil)
        #expect(op_task_add_dependency(dependent, task) == 0)
        let taskHandle = SendablePointer(task)
        let dependentHandle = SendablePointer(dependent)
        // Two waiters: one asleep before the task finishes (woken by the finish), one that comes
        // while on_finish holds it (FINISHED is set: the old wait returned at once). Each
        // records the dependent's unfinished dependencies when its wait returned.
        let waiters = [WaitRecord(), WaitRecord()]
        func startWaiter(_ index: Int) {
            let record = waiters[index]
            Thread {
                let rc = op_task_wait(taskHandle.raw, Int64(OP_WAIT_FOREVER))
                record.left.store(rc == 0 ? Int(op_task_unfinished_dependencies(dependentHandle.raw)) : -2,
                                  ordering: .releasing)
                record.returned.open()
            }.start()
        }
        startWaiter(0)
        #expect(op_queue_submit(queue, task) == 0)
        try #require(held.entered.wait(seconds: Limits.waitSeconds), "on_finish did not run")
        #expect(op_task_is_finished(task), "finished before on_finish")
        #expect(held.ownWait.load(ordering: .relaxed) == 0,
                "a wait from its own on_finish returned \(errnoName(held.ownWait.load(ordering: .relaxed)))")
        startWaiter(1)
        // While on_finish holds the finish, the dependent is still counted and the waits hold.
        for index in 0..<2 {
            #expect(!waiters[index].returned.wait(seconds: Double(Limits.quietNs) / 1e9),
                    "waiter \(index) returned while on_finish still held the release of the dependents")
        }
        held.gate.open()
        for index in 0..<2 {
            // On a timeout the tasks are left alive (not released): a waiter may still read them.
            try #require(waiters[index].returned.wait(seconds: Limits.waitSeconds), "waiter \(index) did not return after the finish")
            let left = waiters[index].left.load(ordering: .acquiring)
            #expect(left == 0, "waiter \(index): the dependent still counted \(left) unfinished dependencies when the wait returned")
        }
        #expect(op_task_is_ready(dependent))
        op_task_release(task)
        op_task_release(dependent)
    }

    /// An on_finish that completes another task on the same thread, whose on_finish waits for
    /// the first task: the wait returns at once (the first task is finished; its release waits
    /// below on the same stack), as one from its own on_finish does.
    @Test func aWaitFromANestedOnFinishForTheOuterTaskReturns() throws {
        let inner = NestedFinish()
        let outer = NestedFinish()
        let innerTask = try makeTask(emptyBody, contextPointer(inner), onFinish: nestedFinish)
        let outerTask = try makeTask(emptyBody, contextPointer(outer), onFinish: nestedFinish)
        // The outer on_finish completes the inner task; the inner on_finish waits for the outer.
        outer.complete = innerTask
        inner.waitFor = outerTask
        let outerHandle = SendablePointer(outerTask)
        let done = Latch()
        Thread {
            _ = op_task_complete(outerHandle.raw) // never submitted: finished here, on_finish here
            done.open()
        }.start()
        try #require(done.wait(seconds: Limits.waitSeconds), "completing the outer task did not return (a nested wait deadlocked)")
        #expect(inner.waitResult.load(ordering: .relaxed) == 0,
                "the inner on_finish's wait for the outer task returned \(errnoName(inner.waitResult.load(ordering: .relaxed)))")
        #expect(op_task_wait(outerTask, Int64(OP_WAIT_FOREVER)) == 0)
        #expect(op_task_wait(innerTask, Int64(OP_WAIT_FOREVER)) == 0)
        op_task_release(innerTask)
        op_task_release(outerTask)
    }

    /// A manual-completion body that completes its own task runs its on_finish inside the
    /// body: a wait there for the task returns 0 (it is finished), not EDEADLK (the body's own
    /// task), as from any on_finish.
    @Test func aWaitFromAnOnFinishRunInsideItsTasksBodyReturns() throws {
        let completion = NestedFinish()
        let queue = try makeQueue("self-completion")
        defer { op_queue_release(queue) }
        let task = try makeTask(selfCompletingBody, contextPointer(completion),
                                flags: UInt32(OP_TASK_MANUAL_COMPLETION), onFinish: nestedFinish)
        completion.waitFor = task // its on_finish waits for its own task
        #expect(op_queue_submit(queue, task) == 0)
        try #require(completion.finished.wait(seconds: Limits.waitSeconds), "on_finish did not run")
        #expect(completion.waitResult.load(ordering: .relaxed) == 0,
                "a wait from on_finish inside the task's body returned \(errnoName(completion.waitResult.load(ordering: .relaxed)))")
        #expect(op_task_wait(task, Limits.waitNs) == 0)
        #expect(waitFor(queue: queue, "self-completion queue"))
        op_task_release(task)
    }

    @Test func onFinishRunsExactlyOncePerTask() throws {
        let counters = Counters()
        let count = 5_000
        counters.finishTarget.store(count, ordering: .releasing)
        let context = contextPointer(counters)
        let queue = try makeQueue("on-finish", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        // A mix: plain, cancelled before submission, and completed by hand without a queue.
        var handled = 0
        for index in 0..<count {
            let task = try makeTask(countRun, context, onFinish: countFinish)
            switch index % 3 {
            case 0: #expect(op_queue_submit(queue, task) == 0)
            case 1: op_task_cancel(task); #expect(op_queue_submit(queue, task) == 0)
            default: #expect(op_task_complete(task) == 0); #expect(op_task_complete(task) == EALREADY)
            }
            handled += 1
            op_task_release(task)
        }
        #expect(counters.allFinished.wait(), "on_finish ran \(counters.finished.load(ordering: .relaxed)) times for \(count) tasks")
        #expect(waitFor(queue: queue, "on_finish queue"))
        #expect(counters.finished.load(ordering: .relaxed) == count)
        #expect(counters.ran.load(ordering: .relaxed) == (0..<count).filter { $0 % 3 == 0 }.count)
    }
}
