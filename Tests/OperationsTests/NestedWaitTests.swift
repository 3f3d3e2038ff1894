// NestedWaitTests.swift — operations that block in waits (SEMANTICS O9, Q1, Q2, Q3): chains of
// nested `addOperations(_:waitUntilFinished: true)` 64 deep, 64 operations of one default-width
// queue each blocked on another queue's work that has not started, and operations blocked outside
// the runtime (a latch standing in for I/O) that must not stop other queues; with the peak
// thread count while they wait. With every worker blocked in a wait these would deadlock; the
// runtime gives a blocked worker's place to a spare thread while it sleeps. The tests run one at
// a time: one that deadlocked would keep its workers blocked and starve the others.
import Operations
import Testing

/// How the levels of a nested-wait chain are spread over queues.
enum NestedChainLayout: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Level k runs on queue k and waits for level k + 1, which it adds to queue k + 1.
    case queuePerLevel
    /// Every level runs on one default-width queue.
    case oneDefaultWidthQueue
    var testDescription: String { rawValue }
}

/// Whether the work the 64 blocked operations wait for is held back until all of them wait.
enum HeldWork: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The work's queue is suspended until all 64 block, then resumed.
    case heldUntilAllWait
    /// The work goes to a serial queue at once and waits there behind the others.
    case queuedBehindTheOthers
    var testDescription: String { rawValue }
}

/// The most threads this process had at any sample.
final class ThreadPeak: Sendable {
    private let peak = Locked(0)
    init() {}
    func sample() {
        let now = ProcessStats.threadCount()
        peak.withLock { $0 = max($0, now) }
    }
    var value: Int { peak.withLock { $0 } }
}

/// A level of a nested-wait chain: adds the next level and waits for it, then logs its own.
private final class NestedChainOperation: Operation, @unchecked Sendable {
    let level: Int
    let depth: Int
    let queues: [OperationQueue]
    let started: Counter
    let finishedLevels: Recorder<Int>
    let problems: Recorder<String>
    let threads: ThreadPeak

    init(level: Int, depth: Int, queues: [OperationQueue], started: Counter, finishedLevels: Recorder<Int>,
         problems: Recorder<String>, threads: ThreadPeak) {
        self.level = level
        self.depth = depth
        self.queues = queues
        self.started = started
        self.finishedLevels = finishedLevels
        self.problems = problems
        self.threads = threads
        super.init()
        name = "level \(level)"
    }

    override func main() {
        started.increment()
        threads.sample()
        if level + 1 < depth {
            let next = NestedChainOperation(level: level + 1, depth: depth, queues: queues, started: started,
                                            finishedLevels: finishedLevels, problems: problems, threads: threads)
            queues[(level + 1) % queues.count].addOperations([next], waitUntilFinished: true)
            if !next.isFinished {
                problems.append("addOperations(_:waitUntilFinished: true) at level \(level) returned before level \(level + 1) finished")
            }
        }
        finishedLevels.append(level)
    }
}

/// Runs a chain of nested waits `depth` levels deep; records issues and returns whether the
/// outermost level finished in time.
@discardableResult
private func runNestedChain(_ layout: NestedChainLayout, depth: Int, threads: ThreadPeak,
                            sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let queues = (0..<(layout == .queuePerLevel ? depth : 1)).map { index in
        let queue = OperationQueue()
        queue.name = "nested level \(index)"
        return queue
    }
    let started = Counter()
    let finishedLevels = Recorder<Int>()
    let problems = Recorder<String>()
    let outermost = NestedChainOperation(level: 0, depth: depth, queues: queues, started: started,
                                         finishedLevels: finishedLevels, problems: problems, threads: threads)
    queues[0].addOperation(outermost)
    guard waitUntilFinished(outermost, "the outermost of \(depth) nested waits (\(layout.rawValue))", sourceLocation: sourceLocation) else {
        Issue.record("\(started.current) of \(depth) levels started, \(finishedLevels.count) finished", sourceLocation: sourceLocation)
        return false
    }
    #expect(finishedLevels.snapshot == Array((0..<depth).reversed()), "levels finish innermost first", sourceLocation: sourceLocation)
    #expect(problems.snapshot.isEmpty, "\(problems.snapshot)", sourceLocation: sourceLocation)
    return true
}

/// Runs `count` operations on one default-width queue, each adding one operation to another
/// queue and waiting for it; records issues and returns whether all of them returned in time.
@discardableResult
private func runBlockedWaiters(_ held: HeldWork, count: Int, threads: ThreadPeak,
                               sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let waiters = OperationQueue()
    waiters.name = "waiters"
    let work = OperationQueue()
    work.name = "awaited work"
    work.maxConcurrentOperationCount = 1
    work.isSuspended = held == .heldUntilAllWait
    let waiting = Latch()
    let returned = Latch()
    let workRan = Counter()
    let problems = Recorder<String>()
    let operations = (0..<count).map { index in
        let operation = BlockOperation {
            threads.sample()
            let awaited = BlockOperation { workRan.increment() }
            awaited.name = "work of waiter \(index)"
            waiting.arrive()
            work.addOperations([awaited], waitUntilFinished: true)
            if !awaited.isFinished { problems.append("waiter \(index) returned before \(awaited) finished") }
            returned.arrive()
        }
        operation.name = "waiter \(index)"
        return operation
    }
    waiters.addOperations(operations, waitUntilFinished: false)
    if held == .heldUntilAllWait {
        let allWaiting = waitFor(waiting, "all \(count) operations of a default-width queue to block in waits on held-back work",
                                 count: count, sourceLocation: sourceLocation)
        #expect(workRan.current == 0, "the awaited work ran while its queue was suspended", sourceLocation: sourceLocation)
        work.isSuspended = false
        guard allWaiting else { return false }
    }
    guard waitFor(returned, "all \(count) blocked operations to return from their waits", count: count, sourceLocation: sourceLocation) else {
        Issue.record("\(waiting.arrivals) waiting, \(workRan.current) awaited operations ran", sourceLocation: sourceLocation)
        return false
    }
    #expect(workRan.current == count, sourceLocation: sourceLocation)
    #expect(problems.snapshot.isEmpty, "\(problems.snapshot)", sourceLocation: sourceLocation)
    return true
}

@Suite(.needsQuietProcess, .serialized)
struct NestedWaitTests {
    static let depth = 64

    @Test(arguments: NestedChainLayout.allCases)
    func Q1_chainOfNestedWaits64DeepFinishesInnermostFirst(layout: NestedChainLayout) {
        runNestedChain(layout, depth: Self.depth, threads: ThreadPeak())
    }

    @Test(arguments: HeldWork.allCases)
    func Q1_Q2_sixtyFourOperationsOfOneDefaultWidthQueueBlockedOnAnotherQueuesWorkAllReturn(held: HeldWork) {
        runBlockedWaiters(held, count: Self.depth, threads: ThreadPeak())
    }

    /// One blocked operation, and all workers of the default class but one blocked. (With every
    /// worker blocked outside the runtime's waits the class stops: the runtime cannot see such a
    /// block, and has no stall detector yet.)
    @Test(arguments: Array(Set([1, max(1, OperationsRuntime.topology.cpuCount - 1)])).sorted())
    func Q3_operationsBlockedOutsideTheRuntimeDoNotStopOtherQueues(blockedCount: Int) {
        let release = Latch() // stands in for I/O that never completes until the test ends
        defer { release.open() }
        let blocked = OperationQueue()
        blocked.name = "blocked on I/O"
        let others = [1, 2, OperationQueue.defaultMaxConcurrentOperationCount].map { width in
            let queue = OperationQueue()
            queue.name = "width \(width)"
            queue.maxConcurrentOperationCount = width
            return queue
        }
        let perQueue = 100
        let ran = Latch()
        let blockedStarted = Latch()
        for _ in 0..<blockedCount {
            blocked.addOperation {
                // Work added from the thread that then blocks (it may land near that worker).
                for queue in others { for _ in 0..<perQueue { queue.addOperation { ran.arrive() } } }
                blockedStarted.arrive()
                release.wait(seconds: 3600)
            }
        }
        guard waitFor(blockedStarted, "\(blockedCount) operations to start and block", count: blockedCount) else { return }
        for queue in others { for _ in 0..<perQueue { queue.addOperation { ran.arrive() } } }
        let expected = (blockedCount + 1) * perQueue * others.count
        waitFor(ran, "every operation of the other queues while \(blockedCount) operations are blocked", count: expected)
        release.open()
        waitUntilAllOperationsAreFinished(blocked)
    }

    @Test func Q3_peakThreadCountWhileOperationsBlockInNestedWaits() {
        let cpus = OperationsRuntime.topology.cpuCount
        let baseline = ProcessStats.threadCount()
        let chainThreads = ThreadPeak()
        guard runNestedChain(.queuePerLevel, depth: Self.depth, threads: chainThreads) else { return }
        let waiterThreads = ThreadPeak()
        guard runBlockedWaiters(.queuedBehindTheOthers, count: Self.depth, threads: waiterThreads) else { return }
        print("[NestedWaitTests] threads: \(baseline) before; peak \(chainThreads.value) in a chain of \(Self.depth) nested waits, "
            + "\(waiterThreads.value) with \(Self.depth) operations blocked on another queue's work (\(cpus) CPUs)")
        // At most one thread per blocked operation, plus a worker per CPU for each QoS class.
        let bound = baseline + Self.depth + 5 * cpus
        #expect(chainThreads.value <= bound, "peak \(chainThreads.value) threads in the nested chain, baseline \(baseline)")
        #expect(waiterThreads.value <= bound, "peak \(waiterThreads.value) threads with blocked waiters, baseline \(baseline)")
    }
}
