// StressDriver.swift — one round of the stress suite: plan a random workload from a seed (queues
// of widths 1, 2, 3 and default; a DAG of operations across them), add it in random chunks while
// suspending, resuming, cancelling, adding barriers and starting waits from other threads, then
// wait for everything with a deadline, check the invariants and wait for every free.
import Glibc
import Operations
import Synchronization

/// One planned operation.
struct PlannedOperation {
    enum Kind {
        case synchronous
        case block(count: Int)
        case asynchronous(finishesInline: Bool)
        /// A plain BlockOperation (the queue's fast path); optionally it sets its completion
        /// block from inside its body.
        case plain(completionInBody: Bool)
    }

    var kind: Kind
    var queue: Int
    var dependencies: [Int]
    var priority: Operation.QueuePriority
    var qualityOfService: QualityOfService
    var threadPriority: Double
    var hasCompletionBlock: Bool
    var cancelledBeforeAdding: Bool
    var body: StressBody
}

extension PlannedOperation.Kind {
    var setsCompletionInBody: Bool {
        if case .plain(completionInBody: true) = self { return true }
        return false
    }
}

/// What a round did, for the suite's summary.
struct StressRoundOutcome {
    var operations = 0
    var bodiesRun = 0
    var cancelledBeforeRunning = 0
    var barriers = 0
    var nestedWaits = 0
    var violations: [String] = []
    /// Set when a wait or a free did not happen before the deadline; the round's threads may
    /// still be blocked, so the suite stops.
    var stuck: String?
}

/// Plans and runs round `number` of the stress run seeded with `seed`.
struct StressRoundDriver {
    static let queueCount = 4
    static let priorities: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
    static let qualities: [QualityOfService] = [.userInteractive, .userInitiated, .default, .utility, .background]

    let seed: UInt64
    let number: Int
    private var random: SeededGenerator

    init(seed: UInt64, number: Int) {
        self.seed = seed
        self.number = number
        // Each round has a generator of its own, so a round replays alone (see StressBudget.firstRound).
        var mixer = SeededGenerator(seed: seed ^ (UInt64(number) &* 0xD1B5_4A32_D192_ED03))
        random = SeededGenerator(seed: mixer.next())
    }

    private mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }
    private mutating func pick<T>(_ values: [T]) -> T { values.randomElement(using: &random)! }

    // MARK: - Planning

    private mutating func planOperations(count: Int, leafQueue: Int?) -> [PlannedOperation] {
        var planned: [PlannedOperation] = []
        for index in 0..<count {
            let queue = Int.random(in: 0..<Self.queueCount, using: &random)
            // Dependencies on recent operations, across queues; the leaf queue's operations
            // depend only on its own (so nested waits on it always end).
            let candidates = (max(0, index - 40)..<index).filter { queue != leafQueue || planned[$0].queue == leafQueue }
            let dependencyCount = min(candidates.count, pick([0, 0, 0, 0, 1, 1, 1, 2, 2, 3]))
            let dependencies = Array(candidates.shuffled(using: &random).prefix(dependencyCount))
            let kind: PlannedOperation.Kind = switch Int.random(in: 0..<20, using: &random) {
            case 0..<6: .synchronous
            case 6..<11: .block(count: Int.random(in: 1...3, using: &random))
            case 11..<16: .plain(completionInBody: chance(0.3))
            default: .asynchronous(finishesInline: chance(0.3))
            }
            var body = StressBody()
            body.spins = chance(0.7) ? Int.random(in: 0...4000, using: &random) : 0
            body.pollsCancellation = chance(0.5)
            if chance(0.04) { body.cancels = (0..<Int.random(in: 1...3, using: &random)).map { _ in Int.random(in: 0..<count, using: &random) } }
            body.cancelsItself = chance(0.02)
            if case .synchronous = kind, leafQueue != nil, queue != leafQueue, chance(0.08) {
                body.nestedWaitCount = Int.random(in: 1...4, using: &random)
                body.nestedWaitChained = chance(0.5)
            }
            planned.append(PlannedOperation(
                kind: kind, queue: queue, dependencies: dependencies,
                priority: pick(Self.priorities),
                qualityOfService: chance(0.4) ? .default : pick(Self.qualities),
                threadPriority: chance(0.8) ? 0.5 : Double.random(in: 0...1, using: &random),
                hasCompletionBlock: chance(0.7) && !kind.setsCompletionInBody,
                cancelledBeforeAdding: chance(0.04),
                body: body))
        }
        return planned
    }

    private func makeOperation(_ plan: PlannedOperation, index: Int, round: StressRound) -> (Operation, OperationRecord) {
        let operation: Operation
        let record: OperationRecord
        func makeRecord(_ kind: String, blocks: Int) -> OperationRecord {
            OperationRecord(index: index, label: "r\(number).op\(index) \(kind) on q\(plan.queue)", queue: plan.queue,
                            blockCount: blocks, hasCompletionBlock: plan.hasCompletionBlock,
                            completionSetInBody: plan.kind.setsCompletionInBody)
        }
        func role(_ record: OperationRecord) -> StressRole { StressRole(round: round, record: record, body: plan.body) }
        switch plan.kind {
        case .synchronous:
            record = makeRecord("sync", blocks: 0)
            operation = StressSyncOperation(role(record))
        case .block(let count):
            record = makeRecord("block×\(count)", blocks: count)
            operation = StressBlockOperation(role(record))
        case .asynchronous(let finishesInline):
            record = makeRecord(finishesInline ? "async-inline" : "async", blocks: 0)
            operation = StressAsyncOperation(role(record), finishesInline: finishesInline)
        case .plain(let completionInBody):
            record = makeRecord(completionInBody ? "plain+completion-in-body" : "plain", blocks: 0)
            operation = PlainStressOperation.make(role(record), completionInBody: completionInBody)
        }
        operation.name = record.label
        operation.queuePriority = plan.priority
        operation.qualityOfService = plan.qualityOfService
        operation.threadPriority = plan.threadPriority
        if plan.hasCompletionBlock { role(record).installCompletionBlock(on: operation) }
        return (operation, record)
    }

    // MARK: - Running

    /// Runs the round and returns what happened. Every wait is bounded by
    /// `StressBudget.deadlineSeconds`.
    mutating func run() -> StressRoundOutcome {
        let widths = [1, 2, 3, OperationQueue.defaultMaxConcurrentOperationCount].shuffled(using: &random)
        let leafQueue: Int? = chance(0.7) ? Int.random(in: 0..<Self.queueCount, using: &random) : nil
        let round = StressRound(seed: seed, number: number, widths: widths, leafQueue: leafQueue)
        let waits = BoundedWaits()
        addWorkload(to: round, waits: waits)

        var outcome = StressRoundOutcome()
        let deadline = ContinuousClock.now + .seconds(StressBudget.deadlineSeconds)
        // Waits from other threads first (their batches may still be on the way into a queue),
        // then each queue: once all returned, every operation has finished.
        var stuck = waits.awaitAll(until: deadline)
        if stuck.isEmpty {
            let queueWaits = BoundedWaits()
            for index in 0..<Self.queueCount {
                guard let queue = round.queue(index) else { continue }
                queueWaits.start("waitUntilAllOperationsAreFinished() of q\(index)", holding: queue) {
                    $0.waitUntilAllOperationsAreFinished()
                }
            }
            stuck = queueWaits.awaitAll(until: deadline)
        }
        if !stuck.isEmpty {
            let named = stuck.prefix(8).joined(separator: "; ") + (stuck.count > 8 ? "; and \(stuck.count - 8) more" : "")
            // The core's own view too: each pool, its tokens and workers, the monitor.
            outcome.stuck = "\(stuck.count) waits did not return within \(StressBudget.deadlineSeconds) s: \(named)\n\(round.stuckReport())\n  runtime:\n\(OperationsRuntime.diagnosticReport())"
            return outcome
        }

        (outcome.bodiesRun, outcome.cancelledBeforeRunning) = round.checkFinalState()
        outcome.operations = round.operationCount
        outcome.barriers = round.barrierCount
        outcome.nestedWaits = round.nestedWaits.load(ordering: .relaxed)

        // Every operation and queue is freed once the queues went idle and the round let go.
        let operationCount = round.operationCount
        let queueCount = round.queueCount
        round.tearDown()
        let freeDeadline = ContinuousClock.now + .seconds(StressBudget.deadlineSeconds)
        let operationsFreed = round.operationsFreed.wait(for: operationCount, seconds: secondsLeft(until: freeDeadline))
        let queuesFreed = round.queuesFreed.wait(for: queueCount, seconds: secondsLeft(until: freeDeadline))
        if !operationsFreed || !queuesFreed {
            round.violation("after \(StressBudget.deadlineSeconds) s only \(round.operationsFreed.arrivals) of \(operationCount) operations "
                + "and \(round.queuesFreed.arrivals) of \(queueCount) queues were freed; still alive: \(round.survivors())")
        }
        outcome.violations = round.violations.snapshot
        return outcome
    }

    /// Creates the queues and operations and adds them in random chunks, with suspensions,
    /// cancellations, cancelAllOperations(), barriers and waits from other threads in between.
    /// Leaves every queue resumed.
    private mutating func addWorkload(to round: StressRound, waits: BoundedWaits) {
        for index in 0..<Self.queueCount {
            let queue = StressQueue(freed: round.queuesFreed)
            queue.name = "r\(number).q\(index)"
            queue.maxConcurrentOperationCount = round.widths[index]
            queue.qualityOfService = pick(Self.qualities)
            queue.isSuspended = chance(0.15)
            round.register(queue: queue)
        }
        let count = max(20, Int(Double(Int.random(in: 60...400, using: &random)) * StressBudget.sizeScale))
        let plans = planOperations(count: count, leafQueue: round.leafQueue)
        for (index, plan) in plans.enumerated() {
            let operation = round.registerNew { registered in
                precondition(registered == index, "planned operations are registered before any other")
                return makeOperation(plan, index: index, round: round)
            }
            for dependency in plan.dependencies { operation.addDependency(round.operation(dependency)!) }
            if plan.cancelledBeforeAdding { operation.cancel() }
        }

        // Barriers only in rounds added in creation order (a barrier plus an operation added
        // after it on which an earlier one depends would be a cycle), on queues no other thread
        // adds to (so "added before" is well defined).
        let shuffled = chance(0.3)
        let barrierQueues = shuffled ? [] : (0..<Self.queueCount).filter { _ in chance(0.35) }
        let order = shuffled ? Array(0..<count).shuffled(using: &random) : Array(0..<count)
        var added: [Int] = []
        var resumeAt: [Int: Int] = [:] // suspended queue → chunk after which it resumes
        for index in 0..<Self.queueCount where round.queue(index)!.isSuspended {
            resumeAt[index] = Int.random(in: 1...8, using: &random)
        }
        var cursor = 0
        var chunkNumber = 0
        while cursor < order.count {
            let chunk = Array(order[cursor..<min(order.count, cursor + Int.random(in: 1...24, using: &random))])
            cursor += chunk.count
            chunkNumber += 1
            addChunk(chunk, to: round, barrierQueues: barrierQueues, waits: waits)
            added += chunk

            if !barrierQueues.isEmpty && chance(0.15) { round.addBarrier(to: pick(barrierQueues)) }
            if chance(0.1) {
                for _ in 0..<Int.random(in: 1...3, using: &random) { round.operation(pick(added))?.cancel() }
            }
            if chance(0.02) {
                let index = Int.random(in: 0..<Self.queueCount, using: &random)
                round.noteCancelAll(queue: index)
                round.queue(index)?.cancelAllOperations()
            }
            if chance(0.08) {
                let index = Int.random(in: 0..<Self.queueCount, using: &random)
                if resumeAt[index] == nil {
                    round.queue(index)?.isSuspended = true
                    resumeAt[index] = chunkNumber + Int.random(in: 1...6, using: &random)
                }
            }
            for (index, chunkToResume) in resumeAt where chunkToResume <= chunkNumber {
                round.queue(index)?.isSuspended = false
                resumeAt[index] = nil
            }
            if chance(0.04), let queue = (0..<Self.queueCount).filter({ !barrierQueues.contains($0) }).randomElement(using: &random) {
                addFreshOperationsFromAShortLivedThread(count: Int.random(in: 1...8, using: &random), queue: queue,
                                                        round: round, waits: waits)
            }
            if chance(0.05), let operation = round.operation(pick(added)) {
                waits.start("waitUntilFinished() of \(operation.name ?? "?")", holding: operation) { $0.waitUntilFinished() }
            }
            if chance(0.03), let queue = round.queue(Int.random(in: 0..<Self.queueCount, using: &random)) {
                waits.start("waitUntilAllOperationsAreFinished() of \(queue.name ?? "?") while adding", holding: queue) {
                    $0.waitUntilAllOperationsAreFinished()
                }
            }
        }
        for index in resumeAt.keys { round.queue(index)?.isSuspended = false }
        if chance(0.5) { cancelWhileADependencyExecutes(round: round, barrierQueues: barrierQueues) }
    }

    /// Issue 13's case (SEMANTICS O8): operations cancelled while their dependency executes are
    /// retired promptly. A holder blocks in its body until the check is done — on a condition
    /// variable the runtime cannot see, or in a wait it can — and its dependents, on queues of
    /// any width, are cancelled once it executes: each must be finished within 5 s while the
    /// holder still executes. Every queue is resumed when this runs.
    private mutating func cancelWhileADependencyExecutes(round: StressRound, barrierQueues: [Int]) {
        let candidates = (0..<Self.queueCount).filter { !barrierQueues.contains($0) }
        guard let holderIndex = candidates.randomElement(using: &random), let holderQueue = round.queue(holderIndex) else { return }
        let visibleWait = chance(0.5)
        let release = Latch()
        let gate = BlockOperation {}
        let executing = Latch()
        let holder = BlockOperation {
            executing.open()
            if visibleWait { gate.waitUntilFinished() } else { _ = release.wait(for: 1, seconds: 30) }
        }
        holder.name = "r\(number) holder on q\(holderIndex) (\(visibleWait ? "visible wait" : "blocked on a condition"))"
        // Not the holder's own queue when it is serial: the holder keeps its only slot.
        let dependentQueues = candidates.filter { $0 != holderIndex || round.widths[$0] != 1 }
        var dependents: [(Operation, Int)] = []
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            guard let queue = dependentQueues.randomElement(using: &random) else { break }
            let operation = round.registerBlockOperations(count: 1, queue: queue, origin: "cancelled-while-dependency-executes")[0]
            operation.addDependency(holder)
            dependents.append((operation, queue))
        }
        holderQueue.addOperation(holder)
        for (operation, queue) in dependents { round.queue(queue)?.addOperation(operation) }
        defer {
            release.open()
            gate.start()
        }
        // The holder waits behind its queue's earlier work (short bodies) at most.
        guard executing.wait(for: 1, seconds: 5) else { return }
        for (operation, _) in dependents { operation.cancel() }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline && !dependents.allSatisfy({ $0.0.isFinished }) { usleep(1000) }
        guard holder.isExecuting else { return } // released early: nothing to conclude
        for (operation, queue) in dependents where !operation.isFinished {
            round.violation("\(operation) on q\(queue) (width \(round.widths[queue])), cancelled while its dependency \(holder.name ?? "") executes, is still unfinished 5 s later")
        }
    }

    /// Creates `count` operations on a new thread, which adds them to `queue` with
    /// `addOperations(_:waitUntilFinished: true)` and exits (threads that only create and submit
    /// work, and then end, are common in applications).
    private func addFreshOperationsFromAShortLivedThread(count: Int, queue: Int, round: StressRound, waits: BoundedWaits) {
        waits.start("addOperations(\(count) fresh operations, waitUntilFinished: true) on q\(queue) from a short-lived thread",
                    holding: round) { round in
            guard let target = round.queue(queue) else { return }
            let operations = round.registerBlockOperations(count: count, queue: queue, origin: "fresh")
            target.addOperations(operations, waitUntilFinished: true)
            for operation in operations where !operation.isFinished {
                round.violation("addOperations(_:waitUntilFinished: true) from a short-lived thread returned before \(operation) finished")
            }
        }
    }

    /// Adds one chunk: one by one, as `addOperations(_:waitUntilFinished: false)` batches per
    /// queue, or (for queues without barriers) as `addOperations(_:waitUntilFinished: true)` on
    /// threads of their own.
    private mutating func addChunk(_ chunk: [Int], to round: StressRound, barrierQueues: [Int], waits: BoundedWaits) {
        let mode = Int.random(in: 0..<10, using: &random)
        var batches: [(queue: Int, indices: [Int])] = []
        for index in chunk {
            let queue = round.queueIndex(ofOperation: index)
            if mode >= 6, let last = batches.last, last.queue == queue {
                batches[batches.count - 1].indices.append(index)
            } else {
                batches.append((queue, [index]))
            }
        }
        for (queueIndex, indices) in batches {
            guard let queue = round.queue(queueIndex) else { continue }
            let operations = indices.map { round.operation($0)! }
            if mode == 9 && !barrierQueues.contains(queueIndex) {
                waits.start("addOperations(\(indices.count) operations, waitUntilFinished: true) on q\(queueIndex)",
                            holding: (queue, operations, round)) { queue, operations, round in
                    queue.addOperations(operations, waitUntilFinished: true)
                    for operation in operations where !operation.isFinished {
                        round.violation("addOperations(_:waitUntilFinished: true) from another thread returned before \(operation) finished")
                    }
                }
                continue
            }
            if barrierQueues.contains(queueIndex) {
                for index in indices { round.noteAddedByDriver(index, queue: queueIndex) }
            }
            if indices.count == 1 {
                queue.addOperation(operations[0])
            } else {
                queue.addOperations(operations, waitUntilFinished: false)
            }
        }
    }
}
