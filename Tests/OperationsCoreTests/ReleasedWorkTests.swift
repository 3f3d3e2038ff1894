// ReleasedWorkTests.swift — work released on the worker that drains a queue (a body's submits to
// its own queue) stays on that worker, in its local run queue, without changing what the queue
// promises: higher bands start first, and a suspended queue starts nothing.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// A queue of width 2 whose other slot a blocker holds, so the parent's worker is the queue's
/// only drainer, and what the children logged.
private final class Family: @unchecked Sendable {
    let queue: OpaquePointer
    let log = Locked<[String]>([])
    let blockerStarted = Latch()
    let releaseBlocker = Latch()
    let parentDone = Latch()
    let childrenRan = Latch()
    init(queue: OpaquePointer) { self.queue = queue }
}

/// A child's context: its family and its name.
private final class Child: @unchecked Sendable {
    let family: Family
    let name: String
    init(_ family: Family, _ name: String) {
        self.family = family
        self.name = name
    }
}

private let childBody: TaskBody = { context in
    let child = contextObject(context, as: Child.self)
    child.family.log.withLock { $0.append(child.name) }
    child.family.childrenRan.arrive()
}

private let familyBlockerBody: TaskBody = { context in
    let family = contextObject(context, as: Family.self)
    family.blockerStarted.arrive()
    _ = family.releaseBlocker.wait(seconds: Limits.waitSeconds)
}

/// Submits five normal children (they stay in this worker's local run queue: no slot is free),
/// then one veryHigh child (into the queue's bands).
private let parentOfFiveAndOneUrgentBody: TaskBody = { context in
    let family = contextObject(context, as: Family.self)
    for index in 0..<5 {
        _ = op_queue_submit_f(family.queue, childBody, contextPointer(Child(family, "n\(index)")))
    }
    var attr = op_task_attr_t()
    op_task_attr_init(&attr)
    attr.priority = OP_PRIORITY_VERY_HIGH
    if let urgent = op_task_create(childBody, contextPointer(Child(family, "urgent")), &attr) {
        _ = op_queue_submit(family.queue, urgent)
        op_task_release(urgent)
    }
    family.parentDone.open()
}

/// Submits five children, then suspends the queue before returning.
private let parentThatSuspendsBody: TaskBody = { context in
    let family = contextObject(context, as: Family.self)
    for index in 0..<5 {
        _ = op_queue_submit_f(family.queue, childBody, contextPointer(Child(family, "c\(index)")))
    }
    op_queue_set_suspended(family.queue, true)
    family.parentDone.open()
}

/// A parent that, again and again, submits a child to its own queue and waits for it.
private final class WaitingParent: @unchecked Sendable {
    let queue: OpaquePointer
    let rounds: Int
    let stranded = Atomic<Int>(0)
    let roundsDone = Atomic<Int>(0)
    let done = Latch()
    init(queue: OpaquePointer, rounds: Int) {
        self.queue = queue
        self.rounds = rounds
    }
}

private let emptyChildBody: TaskBody = { _ in }

/// Submits a child (into this worker's local run queue) and waits for it, with a little work
/// of varying length between rounds, so the queue's idle drainer comes and goes around it.
private let parentWaitingOnEachChildBody: TaskBody = { context in
    let parent = contextObject(context, as: WaitingParent.self)
    for round in 0..<parent.rounds {
        guard let child = op_task_create(emptyChildBody, nil, nil) else { break }
        _ = op_queue_submit(parent.queue, child)
        if op_task_wait(child, Limits.waitNs) == ETIMEDOUT {
            // A child that runs in microseconds did not run in 30 s: no worker was called for it.
            parent.stranded.add(1, ordering: .relaxed)
            op_task_release(child)
            break
        }
        op_task_release(child)
        parent.roundsDone.add(1, ordering: .relaxed)
        let spinUntil = monotonicNs() + Int64((round * 7919) % 6000)
        while monotonicNs() < spinUntil {}
    }
    parent.done.open()
}

/// A width-2 queue with its other slot held by a blocker; the parent runs on the free one.
private func familyWithOneFreeSlot(parent: TaskBody) throws -> Family {
    let queue = try makeQueue("family", width: 2)
    let family = Family(queue: queue)
    #expect(op_queue_submit_f(queue, familyBlockerBody, contextPointer(family)) == 0)
    #expect(family.blockerStarted.wait(seconds: Limits.waitSeconds), "the blocker started")
    #expect(op_queue_submit_f(queue, parent, contextPointer(family)) == 0)
    #expect(family.parentDone.wait(seconds: Limits.waitSeconds), "the parent ran")
    return family
}

@Suite(.sharesProcess)
struct ReleasedWorkTests {
    @Test func aVeryHighTaskABodySubmitsStartsBeforeTheNormalOnesItSubmittedEarlier() throws {
        let family = try familyWithOneFreeSlot(parent: parentOfFiveAndOneUrgentBody)
        defer { op_queue_release(family.queue) }
        #expect(family.childrenRan.wait(for: 6, seconds: Limits.waitSeconds), "the six children ran")
        family.releaseBlocker.open()
        #expect(op_queue_wait(family.queue, Limits.waitNs) == 0)
        #expect(family.log.withLock { $0 } == ["urgent", "n0", "n1", "n2", "n3", "n4"],
                "priority first, then the order of submission")
    }

    @Test(arguments: [2, 4])
    func aChildABodySubmitsAndWaitsForIsNeverStranded(width: Int32) throws {
        // The child goes to the parent's local run queue; whenever the queue's idle drainer is
        // about, the push hands it to the bands, and either that drainer takes it or a new one
        // is claimed. A child that no worker took (the bands held it, no token was out) made
        // the parent's wait run out: on 2 CPUs within 12 to 456 rounds before the fix.
        let queue = try makeQueue("waiting-parent", width: width)
        defer { op_queue_release(queue) }
        let parent = WaitingParent(queue: queue, rounds: scaled(4000, tsan: 800))
        #expect(op_queue_submit_f(queue, parentWaitingOnEachChildBody, contextPointer(parent)) == 0)
        #expect(parent.done.wait(seconds: 2 * Limits.waitSeconds), "the parent finished \(parent.roundsDone.load(ordering: .relaxed)) of \(parent.rounds) rounds")
        #expect(parent.stranded.load(ordering: .relaxed) == 0,
                "a child waited \(Limits.waitSeconds) s with no worker to run it, in round \(parent.roundsDone.load(ordering: .relaxed))")
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
    }

    @Test func tasksABodySubmittedDoNotStartOnceItSuspendedTheQueueAndAllRunOnResume() throws {
        let family = try familyWithOneFreeSlot(parent: parentThatSuspendsBody)
        defer { op_queue_release(family.queue) }
        sleepNs(Limits.quietNs)
        #expect(family.childrenRan.arrivals == 0, "\(family.childrenRan.arrivals) children started on a suspended queue")
        #expect(op_queue_unfinished(family.queue) == 6, "the blocker and five children are unfinished")
        op_queue_set_suspended(family.queue, false)
        #expect(family.childrenRan.wait(for: 5, seconds: Limits.waitSeconds), "the children ran after the resume")
        family.releaseBlocker.open()
        #expect(op_queue_wait(family.queue, Limits.waitNs) == 0)
        #expect(family.log.withLock { $0 } == ["c0", "c1", "c2", "c3", "c4"])
    }
}
