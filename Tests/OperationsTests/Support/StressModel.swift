// StressModel.swift — what the stress suite knows about one round while it runs, and the
// invariants it checks: every body runs exactly once or its operation ends cancelled before
// starting, never before its dependencies finished; no queue runs more operations than its width;
// completion blocks run once, after finishing; barriers separate what was added before them from
// what was added after; everything is freed at the end.
import Glibc
import Operations
import OperationsCore
import Synchronization

/// How long the stress runs and how large its rounds are. OPERATIONS_STRESS_SECONDS sets the
/// time; by default 60 s, less under the sanitizers (everything there runs several times
/// slower, and the suite runs under ThreadSanitizer in CI too).
enum StressBudget {
    static let seconds: Double = {
        if let text = environmentValue("OPERATIONS_STRESS_SECONDS"), let value = Double(text), value >= 0 { return value }
        if runningUnderThreadSanitizer { return 15 }
        if runningUnderAddressSanitizer { return 20 }
        return 60
    }()

    /// Multiplies the number of operations per round.
    static let sizeScale: Double = runningUnderThreadSanitizer ? 0.25 : runningUnderAddressSanitizer ? 0.5 : 1

    /// Deadline of one round's waits and of the frees after it.
    static let deadlineSeconds: Double = runningUnderSanitizer ? 120 : 30

    /// OPERATIONS_STRESS_FIRST_ROUND: start at this round (to replay a failing round of a seed).
    static let firstRound: Int = environmentValue("OPERATIONS_STRESS_FIRST_ROUND").flatMap { Int($0) } ?? 0
}

/// What happened to one operation of a round. Counters only; it holds no operation.
final class OperationRecord: Sendable {
    let index: Int
    let label: String
    let queue: Int
    /// Execution blocks of a BlockOperation (0 for the other kinds).
    let blockCount: Int
    let hasCompletionBlock: Bool
    /// The body sets the completion block (so it runs once exactly when the body ran).
    let completionSetInBody: Bool
    let bodyStarts = Atomic<Int>(0)
    let bodyEnds = Atomic<Int>(0)
    let blockRuns = Atomic<Int>(0)
    let completions = Atomic<Int>(0)
    /// Set while the body has been in a nested wait: its queue's width gauge keeps counting it
    /// apart until the body ends (see `bodyEnded`).
    let waitedInBody = Atomic<Bool>(false)
    /// Its body runs on its own class's workers, outside its default-width queue's slots (its
    /// own QoS was above the queue's when it became ready): counted in `outsideGauges`.
    let ranOutsideWidth = Atomic<Bool>(false)
    /// Where the busy work stores its result, so an optimiser cannot drop the work.
    let workSink = Atomic<UInt64>(0)

    init(index: Int, label: String, queue: Int, blockCount: Int, hasCompletionBlock: Bool,
         completionSetInBody: Bool = false) {
        self.index = index
        self.label = label
        self.queue = queue
        self.blockCount = blockCount
        self.hasCompletionBlock = hasCompletionBlock
        self.completionSetInBody = completionSetInBody
    }
}

/// Operations of one queue that run at the same moment; those blocked in a nested wait are
/// counted apart, since a default-width queue may start others while they wait.
final class WidthGauge: Sendable {
    private let state = Locked((running: 0, blockedInWaits: 0, peak: 0))

    /// Returns how many run now (this one included) and how many of those are blocked in waits.
    func enter() -> (running: Int, blockedInWaits: Int) {
        state.withLock {
            $0.running += 1
            $0.peak = max($0.peak, $0.running)
            return ($0.running, $0.blockedInWaits)
        }
    }

    /// One step for a body that waited (`endingWait`): an operation entering between the two
    /// would count the sleeper as running but not as blocked, and report the queue over its
    /// width when it is not.
    func leave(endingWait: Bool = false) {
        state.withLock {
            $0.running -= 1
            if endingWait { $0.blockedInWaits -= 1 }
        }
    }
    func beginWait() { state.withLock { $0.blockedInWaits += 1 } }
    var peak: Int { state.withLock { $0.peak } }
}

/// A weak reference, to name what was not freed.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    let label: String
    init(_ object: Object, label: String) {
        self.object = object
        self.label = label
    }
}

/// One round: its queues and operations (until `tearDown()`), the records, and the checks.
final class StressRound: @unchecked Sendable {
    struct Barrier {
        let queue: Int
        /// How many operations the driver had added to the queue before the barrier.
        let addedBefore: Int
        /// cancelAllOperations() calls on the queue before the barrier was added.
        let cancelAllsBefore: Int
        var runs = 0
    }

    private struct State {
        var queues: [StressQueue] = []
        var operations: [Operation] = []
        var records: [OperationRecord] = []
        /// Per queue, the operations the driver added to it, in order (for barrier checks; only
        /// queues that get barriers, which only the driver adds to).
        var addedByDriver: [[Int]]
        var barriers: [Barrier] = []
        var cancelAlls: [Int]
        var weakOperations: [WeakReference<Operation>] = []
        var weakQueues: [WeakReference<OperationQueue>] = []
    }

    let seed: UInt64
    let number: Int
    /// Per queue: the width set (-1: default) and the most operations that may run at once.
    let widths: [Int]
    let widthBounds: [Int]
    /// The queue nested waits add to, if any: its operations never wait and depend on nothing
    /// outside it, so a nested wait on it always ends.
    let leafQueue: Int?
    let gauges: [WidthGauge]
    let outsideGauges: [WidthGauge]
    let violations = Recorder<String>()
    let operationsFreed = Latch()
    let queuesFreed = Latch()
    /// At most one operation blocks in a nested wait at a time (until the runtime helps while
    /// waiting, more could block every worker).
    let nestedWaitInProgress = Atomic<Bool>(false)
    let nestedWaits = Atomic<Int>(0)
    private let state: Locked<State>

    init(seed: UInt64, number: Int, widths: [Int], leafQueue: Int?) {
        self.seed = seed
        self.number = number
        self.widths = widths
        // What a default-width queue allows: the CPUs, or the container's CPU limit when lower.
        let cpus = OperationsRuntime.topology.defaultWidth
        widthBounds = widths.map { $0 == OperationQueue.defaultMaxConcurrentOperationCount ? cpus : $0 }
        self.leafQueue = leafQueue
        gauges = widths.map { _ in WidthGauge() }
        outsideGauges = widths.map { _ in WidthGauge() }
        state = Locked(State(addedByDriver: widths.map { _ in [] }, cancelAlls: widths.map { _ in 0 }))
    }

    func violation(_ text: String) { violations.append(text) }

    // MARK: - Registration

    func register(queue: StressQueue) {
        state.withLock {
            $0.queues.append(queue)
            $0.weakQueues.append(WeakReference(queue, label: queue.name ?? "queue"))
        }
    }

    /// Creates and registers an operation: `make` gets the index it will have. Safe from any
    /// thread (operations blocked in nested waits add operations while the driver runs).
    func registerNew(_ make: (_ index: Int) -> (Operation, OperationRecord)) -> Operation {
        state.withLock {
            let (operation, record) = make($0.operations.count)
            $0.operations.append(operation)
            $0.records.append(record)
            $0.weakOperations.append(WeakReference(operation, label: record.label))
            return operation
        }
    }

    func operation(_ index: Int) -> Operation? {
        state.withLock { index < $0.operations.count ? $0.operations[index] : nil }
    }

    func queue(_ index: Int) -> StressQueue? {
        state.withLock { index < $0.queues.count ? $0.queues[index] : nil }
    }

    func queueIndex(ofOperation index: Int) -> Int { state.withLock { $0.records[index].queue } }

    var operationCount: Int { state.withLock { $0.operations.count } }
    var queueCount: Int { state.withLock { $0.weakQueues.count } }
    var barrierCount: Int { state.withLock { $0.barriers.count } }

    func noteAddedByDriver(_ index: Int, queue: Int) {
        state.withLock { $0.addedByDriver[queue].append(index) }
    }

    func noteCancelAll(queue: Int) {
        state.withLock { $0.cancelAlls[queue] += 1 }
    }

    /// Adds a barrier block to `queue` that checks the separation when it runs.
    func addBarrier(to queue: Int) {
        guard let target = self.queue(queue) else { return }
        let barrier = state.withLock { state -> Int in
            state.barriers.append(Barrier(queue: queue, addedBefore: state.addedByDriver[queue].count,
                                          cancelAllsBefore: state.cancelAlls[queue]))
            return state.barriers.count - 1
        }
        target.addBarrierBlock { [self] in barrierRan(barrier) }
    }

    // MARK: - Checks while running

    /// At the start of a body (on the thread running it, inside the queue's slot).
    func bodyStarted(_ operation: Operation, _ record: OperationRecord) {
        let starts = record.bodyStarts.add(1, ordering: .relaxed).newValue
        if starts > 1 { violation("\(record.label) started its body \(starts) times") }
        for dependency in operation.dependencies where !dependency.isFinished {
            violation("\(record.label) started before its dependency \(dependency) finished")
        }
        // A default width is counted per class: a task of a class above its queue's runs on
        // its own class's workers, outside the queue's slots (DESIGN.md, "own class").
        if let task = op_task_current(), op_task_runs_outside_width(task) {
            record.ranOutsideWidth.store(true, ordering: .relaxed)
            if widths[record.queue] != OperationQueue.defaultMaxConcurrentOperationCount {
                violation("\(record.label) ran outside the slots of q\(record.queue), of width \(widths[record.queue])")
            }
            _ = outsideGauges[record.queue].enter()
            return
        }
        enterSlot(of: record.queue, what: record.label)
    }

    /// The gauge an operation's body counts in while it runs.
    func gauge(of record: OperationRecord) -> WidthGauge {
        record.ranOutsideWidth.load(ordering: .relaxed) ? outsideGauges[record.queue] : gauges[record.queue]
    }

    /// At the end of a body (before an asynchronous operation announces that it finished).
    func bodyEnded(_ record: OperationRecord) {
        // A default-width queue lends the slot of an operation asleep in a wait, and an
        // operation started on the lent slot runs on after the sleeper wakes (a lowered width
        // stops no running operation; nothing new starts meanwhile). The body cannot see when
        // the queue started the other one, so the sleeper counts apart until its body ends.
        gauge(of: record).leave(endingWait: record.waitedInBody.exchange(false, ordering: .relaxed))
        record.bodyEnds.add(1, ordering: .relaxed)
    }

    /// The completion block of every operation that has one.
    func completionRan(_ operation: Operation, _ record: OperationRecord) {
        let runs = record.completions.add(1, ordering: .relaxed).newValue
        if runs > 1 { violation("the completion block of \(record.label) ran \(runs) times") }
        if !operation.isFinished { violation("the completion block of \(record.label) ran before it finished") }
    }

    /// Whether the monitor counts some worker blocked now (a spare runs in some class).
    static func monitorStandsIn() -> Bool {
        (0..<5).contains { op_runtime_spare_workers(op_qos_t(UInt32($0)), nil) > 0 }
    }

    private func enterSlot(of queue: Int, what: String) {
        let (running, blocked) = gauges[queue].enter()
        // A default-width queue may start another operation while one of its own is blocked in a
        // nested wait; an explicit width holds in any case (SEMANTICS Q2).
        let defaultWidth = widths[queue] == OperationQueue.defaultMaxConcurrentOperationCount
        let counted = defaultWidth ? running - blocked : running
        // A default-width queue may also run one more while the blocked-worker monitor stands in
        // for a body it saw asleep where the runtime cannot see (a lock held a whole tick on a
        // loaded machine): a spare then runs (DESIGN.md, "the monitor").
        if counted > widthBounds[queue] && !(defaultWidth && StressRound.monitorStandsIn()) {
            violation("queue q\(queue) (width \(widths[queue])) ran \(running) operations at once (\(blocked) blocked in waits) when \(what) started")
        }
    }

    private func barrierRan(_ barrier: Int) {
        let (queue, runs, before, after) = state.withLock { state in
            state.barriers[barrier].runs += 1
            let entry = state.barriers[barrier]
            let added = state.addedByDriver[entry.queue]
            return (entry.queue, entry.runs,
                    added[..<entry.addedBefore].map { state.operations[$0] },
                    added[entry.addedBefore...].map { state.records[$0] })
        }
        enterSlot(of: queue, what: "barrier \(barrier)")
        defer { gauges[queue].leave() }
        if runs > 1 { violation("barrier \(barrier) of q\(queue) ran \(runs) times") }
        for operation in before where !operation.isFinished {
            violation("barrier \(barrier) of q\(queue) ran before \(operation), added before it, finished")
        }
        for record in after where record.bodyStarts.load(ordering: .relaxed) > 0 {
            violation("\(record.label), added to q\(queue) after barrier \(barrier), started before the barrier ran")
        }
    }

    // MARK: - Checks at the end

    /// After every wait returned: every operation finished, ran once or was cancelled before it
    /// started, ran all its blocks and its completion block once; every barrier ran once unless
    /// a cancelAllOperations() may have cancelled it. Returns how many bodies ran and how many
    /// operations ended cancelled without running.
    func checkFinalState() -> (bodiesRun: Int, cancelledBeforeRunning: Int) {
        let (operations, records, barriers, cancelAlls) = state.withLock { ($0.operations, $0.records, $0.barriers, $0.cancelAlls) }
        // A completion block runs after its operation's finish, on a thread of its own: the
        // waits returned before the last ones may have run. Give them the deadline.
        _ = eventually(seconds: StressBudget.deadlineSeconds) {
            zip(operations, records).allSatisfy { _, record in
                let expected = record.hasCompletionBlock || (record.completionSetInBody && record.bodyStarts.load(ordering: .relaxed) > 0) ? 1 : 0
                return record.completions.load(ordering: .relaxed) >= expected
            }
        }
        var bodiesRun = 0
        for (operation, record) in zip(operations, records) {
            let starts = record.bodyStarts.load(ordering: .relaxed)
            let ends = record.bodyEnds.load(ordering: .relaxed)
            let blocks = record.blockRuns.load(ordering: .relaxed)
            let completions = record.completions.load(ordering: .relaxed)
            if !operation.isFinished {
                violation("\(record.label) is not finished after every wait returned: \(operation)")
            }
            if starts == 0 {
                if !operation.isCancelled { violation("\(record.label) never ran and was not cancelled") }
                if blocks != 0 { violation("\(record.label) ran \(blocks) blocks without starting its body") }
            } else if starts != 1 || ends != 1 {
                violation("\(record.label) started its body \(starts) times and ended it \(ends) times")
            } else if blocks != record.blockCount {
                violation("\(record.label) ran \(blocks) of its \(record.blockCount) execution blocks")
            }
            if starts > 0 { bodiesRun += 1 }
            let expected = record.hasCompletionBlock || (record.completionSetInBody && starts > 0) ? 1 : 0
            if completions != expected {
                violation("the completion block of \(record.label) ran \(completions) times, expected \(expected)")
            }
        }
        for (index, barrier) in barriers.enumerated() where barrier.runs == 0 {
            if cancelAlls[barrier.queue] == barrier.cancelAllsBefore {
                violation("barrier \(index) of q\(barrier.queue) never ran, and no cancelAllOperations() came after it")
            }
        }
        return (bodiesRun, operations.count - bodiesRun)
    }

    /// Drops every operation and queue the round holds, so they can be freed.
    func tearDown() {
        state.withLock {
            $0.operations = []
            $0.queues = []
        }
    }

    /// Labels of operations and queues that are still alive (after `tearDown()`).
    func survivors(limit: Int = 12) -> [String] {
        state.withLock { state in
            let operations = state.weakOperations.filter { $0.object != nil }.map(\.label)
            let queues = state.weakQueues.filter { $0.object != nil }.map(\.label)
            return Array((queues + operations).prefix(limit))
        }
    }

    /// What is stuck: per queue its state and first unfinished operations, and the nested wait.
    func stuckReport(limit: Int = 12) -> String {
        let (queues, operations, records) = state.withLock { ($0.queues, $0.operations, $0.records) }
        var lines: [String] = []
        for (index, queue) in queues.enumerated() {
            lines.append("  q\(index) width \(widths[index]) suspended \(queue.isSuspended) operationCount \(queue.operationCount)")
        }
        let unfinished = zip(operations, records).filter { !$0.0.isFinished }
        lines.append("  \(unfinished.count) of \(operations.count) operations unfinished; nested wait in progress: \(nestedWaitInProgress.load(ordering: .relaxed))")
        for (operation, record) in unfinished.prefix(limit) {
            let waitingFor = operation.dependencies.filter { !$0.isFinished }.map { $0.name ?? "\($0)" }
            lines.append("  \(operation) on q\(record.queue): ready \(operation.isReady), executing \(operation.isExecuting), "
                + "body started \(record.bodyStarts.load(ordering: .relaxed))×, unfinished dependencies \(waitingFor)")
        }
        return lines.joined(separator: "\n")
    }
}

/// Blocking calls made on threads of their own, each opening a latch when it returned; the round
/// waits for all of them with one deadline and names those that did not return.
final class BoundedWaits: Sendable {
    private let pending = Locked<[(what: String, returned: Latch)]>([])

    /// Runs `body(payload)` on a new thread. The thread drops the payload before it reports back,
    /// so what it holds can be freed as soon as the wait returned.
    func start<Payload: Sendable>(_ what: String, holding payload: Payload, _ body: @escaping @Sendable (Payload) -> Void) {
        let box = Locked<Payload?>(payload)
        let returned = onNewThread {
            if let payload = box.withLock({ $0.take() }) { body(payload) }
        }
        pending.withLock { $0.append((what, returned)) }
    }

    /// Waits until every call returned or `deadline` passed; returns what did not return.
    func awaitAll(until deadline: ContinuousClock.Instant) -> [String] {
        var stuck: [String] = []
        for (what, returned) in pending.withLock({ $0 }) {
            if !returned.wait(for: 1, seconds: secondsLeft(until: deadline)) { stuck.append(what) }
        }
        return stuck
    }
}

/// Seconds from now until `deadline` (0 once it passed).
func secondsLeft(until deadline: ContinuousClock.Instant) -> Double {
    let left = (deadline - .now).components
    return max(0, Double(left.seconds) + Double(left.attoseconds) * 1e-18)
}
