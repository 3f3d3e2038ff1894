// StressOperations.swift — the operations and queues of the stress suite: a synchronous subclass
// (`main()`), a BlockOperation subclass, an asynchronous subclass that finishes through
// willChangeValue / didChangeValue, and a queue; each reports to its round and counts its frees.
import Dispatch
import Glibc
import Operations
import Synchronization

/// What a stress operation does when it runs, drawn when the round is planned.
struct StressBody: Sendable {
    /// Busy work, in loop iterations.
    var spins = 0
    /// Stop the busy work early once cancelled (the body still counts as having run).
    var pollsCancellation = false
    /// Operations of the round (by index) it cancels while it runs.
    var cancels: [Int] = []
    var cancelsItself = false
    /// When > 0 (synchronous operations only): adds this many new operations to the round's
    /// leaf queue with `addOperations(_:waitUntilFinished: true)`, if no other nested wait is in
    /// progress.
    var nestedWaitCount = 0
    /// Chain the nested operations (each depends on the one before).
    var nestedWaitChained = false
}

/// Who a stress operation is: its round, its record, and what its body does.
struct StressRole: Sendable {
    let round: StressRound
    let record: OperationRecord
    let body: StressBody
}

/// An operation of a stress round.
protocol StressOperation: Operation {
    var role: StressRole { get }
}

extension StressOperation {
    var round: StressRound { role.round }
    var record: OperationRecord { role.record }

    /// The body of a synchronous operation (see `StressRole.runBody`).
    func runBody(_ inner: () -> Void = {}) { role.runBody(of: self, inner) }

    /// Runs `body` (see `StressRole.perform`).
    func perform(_ body: StressBody) { role.perform(body, in: self) }

    /// Sets the completion block that reports to the round.
    func installCompletionBlock() { role.installCompletionBlock(on: self) }
}

extension StressRole {
    /// The body of a synchronous `operation`, between the round's checks at its start and end;
    /// `inner` is what the class adds (a BlockOperation's blocks).
    func runBody(of operation: Operation, _ inner: () -> Void = {}) {
        round.bodyStarted(operation, record)
        perform(body, in: operation)
        inner()
        round.bodyEnded(record)
    }

    /// Runs `body` inside `operation`: busy work, cancellations, and the nested wait.
    func perform(_ body: StressBody, in operation: Operation) {
        var sink: UInt64 = record.workSink.load(ordering: .relaxed)
        for step in 0..<body.spins {
            sink = sink &* 6_364_136_223_846_793_005 &+ UInt64(step)
            if body.pollsCancellation && step & 63 == 0 && operation.isCancelled { break }
        }
        record.workSink.store(sink, ordering: .relaxed)
        for index in body.cancels { round.operation(index)?.cancel() }
        if body.cancelsItself { operation.cancel() }
        if body.nestedWaitCount > 0 { waitNested(count: body.nestedWaitCount, chained: body.nestedWaitChained) }
    }

    /// Adds `count` new operations to the leaf queue and waits for them, unless another nested
    /// wait is in progress or the round has no leaf queue.
    private func waitNested(count: Int, chained: Bool) {
        guard let leaf = round.leafQueue, let queue = round.queue(leaf),
              round.nestedWaitInProgress.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        defer { round.nestedWaitInProgress.store(false, ordering: .releasing) }
        let operations = round.registerBlockOperations(count: count, queue: leaf, origin: "nested")
        if chained {
            for (dependency, dependent) in zip(operations, operations.dropFirst()) { dependent.addDependency(dependency) }
        }
        if !record.waitedInBody.exchange(true, ordering: .relaxed) { round.gauge(of: record).beginWait() }
        queue.addOperations(operations, waitUntilFinished: true) // counted apart until the body ends
        round.nestedWaits.add(1, ordering: .relaxed)
        for operation in operations where !operation.isFinished {
            round.violation("addOperations(_:waitUntilFinished: true) from \(record.label) returned before \(operation) finished")
        }
    }

    /// Sets the completion block of `operation` that reports to the round.
    func installCompletionBlock(on operation: Operation) {
        operation.completionBlock = { [unowned operation, round, record] in round.completionRan(operation, record) }
    }
}

extension StressRound {
    /// Creates and registers `count` one-block operations for `queue` that do nothing else,
    /// with completion blocks (for operations that threads create while the round runs).
    func registerBlockOperations(count: Int, queue: Int, origin: String) -> [Operation] {
        (0..<count).map { _ in
            registerNew { index in
                let record = OperationRecord(index: index, label: "r\(number).op\(index) \(origin) block on q\(queue)",
                                             queue: queue, blockCount: 1, hasCompletionBlock: true)
                let operation = StressBlockOperation(StressRole(round: self, record: record, body: StressBody()))
                operation.name = record.label
                operation.installCompletionBlock()
                return (operation, record)
            }
        }
    }
}

/// A synchronous subclass: overrides `main()`.
final class StressSyncOperation: Operation, StressOperation, @unchecked Sendable {
    let role: StressRole

    init(_ role: StressRole) {
        self.role = role
        super.init()
    }

    override func main() { runBody() }

    deinit { round.operationsFreed.arrive() }
}

/// A BlockOperation subclass; its blocks count themselves.
final class StressBlockOperation: BlockOperation, StressOperation, @unchecked Sendable {
    let role: StressRole

    init(_ role: StressRole) {
        self.role = role
        super.init()
        for _ in 0..<role.record.blockCount {
            addExecutionBlock { [record = role.record] in record.blockRuns.add(1, ordering: .relaxed) }
        }
    }

    override func main() { runBody { super.main() } }

    deinit { round.operationsFreed.arrive() }
}

/// An asynchronous subclass in the guide's style: `start()` marks it executing and returns (or
/// finishes inline), the work runs on a Dispatch queue, and it announces `isFinished` through
/// willChangeValue / didChangeValue.
final class StressAsyncOperation: Operation, StressOperation, @unchecked Sendable {
    let role: StressRole
    private let finishesInline: Bool
    private let lock = Lock()
    private var executing = false  // guarded by `lock`
    private var finished = false   // guarded by `lock`

    init(_ role: StressRole, finishesInline: Bool) {
        self.role = role
        self.finishesInline = finishesInline
        super.init()
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { executing } }
    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        if isCancelled {
            willChangeValue(forKey: "isFinished")
            lock.withLock { finished = true }
            didChangeValue(forKey: "isFinished")
            return
        }
        willChangeValue(forKey: "isExecuting")
        lock.withLock { executing = true }
        didChangeValue(forKey: "isExecuting")
        round.bodyStarted(self, record)
        if finishesInline {
            work()
        } else {
            DispatchQueue.global().async { self.work() }
        }
    }

    private func work() {
        perform(role.body)
        round.bodyEnded(record)
        willChangeValue(forKey: "isFinished")
        willChangeValue(forKey: "isExecuting")
        lock.withLock {
            executing = false
            finished = true
        }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }

    deinit { round.operationsFreed.arrive() }
}

/// A plain `BlockOperation` (the class itself, so the queue runs it on its fast path when it
/// can): its one block runs the body and, if planned, sets the completion block from inside
/// the body. It reports its free through a sentinel its block captures (the block is released
/// with the operation).
enum PlainStressOperation {
    static func make(_ role: StressRole, completionInBody: Bool) -> BlockOperation {
        let box = WeakOperationBox()
        let sentinel = FreeSentinel(role.round.operationsFreed)
        let operation = BlockOperation { [box, sentinel] in
            withExtendedLifetime(sentinel) {}
            guard let operation = box.operation else {
                role.round.violation("\(role.record.label) ran after the round let go of it")
                return
            }
            role.runBody(of: operation)
            if completionInBody { role.installCompletionBlock(on: operation) }
        }
        box.operation = operation
        return operation
    }

    /// The block's way to its own operation, without keeping it alive.
    private final class WeakOperationBox: @unchecked Sendable {
        weak var operation: Operation? // written once, before the operation is added
    }

    /// Arrives at `latch` when freed.
    private final class FreeSentinel: Sendable {
        let latch: Latch
        init(_ latch: Latch) { self.latch = latch }
        deinit { latch.arrive() }
    }
}

/// A queue that reports when it is freed.
final class StressQueue: OperationQueue, @unchecked Sendable {
    private let freed: Latch

    init(freed: Latch) {
        self.freed = freed
        super.init()
    }

    deinit { freed.arrive() }
}
