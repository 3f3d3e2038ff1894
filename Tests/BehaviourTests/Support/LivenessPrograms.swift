// LivenessPrograms.swift — the generator of the liveness fuzzer (LivenessFuzzTests.swift):
// seeded random programs over Foundation's Operation / OperationQueue API that must complete,
// run with a deadline on the runtime under test by LivenessInterpreter.swift.
//
// A program is 1–3 queues (default width, serial, explicit width 2–4) and 5–40 operations added
// in index order, with steps between the adds (cancel, cancelAllOperations, suspend / resume,
// width, priority and QoS changes, barriers, short pauses). Operation kinds: plain block
// operations; bodies that block *invisibly* (semaphore, condition, pipe read, poll, usleep loop)
// until an operation added LATER signals them; bodies that wait visibly (waitUntilFinished) for
// an earlier operation; bodies that change a queue's width; asynchronous subclasses that finish
// later from another thread, some of which finish themselves when cancelled (even before their
// queue started them); and a closure operation whose captured object's deinit waits for its own
// queue.
//
// Only satisfiable programs are generated:
// - A signaller (what an invisible waiter waits for) is a plain block operation with no
//   dependencies, on a queue with no barrier; it signals from its body and from its completion
//   block (so cancelling it still releases its waiters).
// - A waiter (invisible or visible) on a queue of explicit width waits only for an operation on a
//   default-width queue, or on its own queue when that queue's waiters stay below its width
//   (widths are only ever raised, or set to the default). Waiters on default-width queues may
//   wait for anything: the runtime must add threads (Foundation does), the pattern under test.
// - A visible wait is made only by a body on a default-width queue, and targets an EARLIER
//   operation (dependencies point to earlier operations only, so the target never depends on its
//   waiter). With that, the slots of explicit-width queues are held only by bodies that finish,
//   or by invisible waiters whose signallers run regardless, and by induction over the add
//   order every operation finishes. (A visible waiter on a serial queue could hold the slot an
//   earlier, dependency-delayed target needs: a real deadlock on any runtime.)
// - At most 4 blocked bodies per program: Foundation on Linux adds about one thread a second.
// Every queue is resumed at the end.
//
// Grammar 2 (issue 33; grammar 1 is kept for the regression seeds found before it) adds, on top of
// the same program: completion-block actions (wait for the own operation, an earlier one, the own
// queue; take the program's lock, which `waitHoldingLock` steps hold while they wait; add to and
// cancel the own queue), late dependencies added by steps in any order (kept acyclic through
// dependencies, waits and barriers), thread priorities, and Foundation operations through a
// queue's `foundationQueue` with dependencies among them added in any order. One seed in five of
// grammar 2 makes a program of another shape instead (LivenessShapes.swift).
import Testing

// MARK: - Randomness

/// SplitMix64 with the helpers the generator needs.
struct LivenessRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `range` (the bias is irrelevant here).
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) < p * 1_000_000 }

    mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }
}

// MARK: - Programs

struct LivenessProgram: CustomStringConvertible {
    enum Width: CustomStringConvertible {
        case standard, serial, explicit(Int)
        var count: Int? {
            switch self {
            case .standard: return nil
            case .serial: return 1
            case .explicit(let n): return n
            }
        }
        var description: String {
            switch self {
            case .standard: return "default"
            case .serial: return "serial"
            case .explicit(let n): return "width \(n)"
            }
        }
    }

    /// How an invisible waiter blocks.
    enum Block: String, CaseIterable { case semaphore, condition, pipeRead, poll, usleep }

    enum Kind: CustomStringConvertible {
        case plain
        /// Blocks invisibly until operation `on` (added later) signals.
        case invisibleWait(on: Int, Block)
        /// `waitUntilFinished()` on operation `on` (added earlier).
        case visibleWait(on: Int)
        /// Sets `maxConcurrentOperationCount` of queue `queue` to `to` while running.
        case setWidth(queue: Int, to: Int)
        /// An asynchronous subclass that finishes `after` µs after it started, from another
        /// thread; with `finishesOnCancel`, its cancel() finishes it (even before it started).
        case async(after: Int, finishesOnCancel: Bool)
        /// A closure operation we never hold; its captured object's deinit waits for its queue.
        case deinitWait

        var description: String {
            switch self {
            case .plain: return "plain"
            case .invisibleWait(let on, let how): return "waits(\(how.rawValue)) for #\(on)"
            case .visibleWait(let on): return "waitUntilFinished(#\(on))"
            case .setWidth(let queue, let to): return "sets q\(queue) width \(to)"
            case .async(let after, let finishesOnCancel):
                return "async(\(after) µs\(finishesOnCancel ? ", cancel finishes" : ""))"
            case .deinitWait: return "deinit waits for its queue"
            }
        }
    }

    /// What a completion block does after it counted and signalled (grammar 2): what
    /// Foundation lets a completion block do, which the runtime must let it do too (issue 33,
    /// item 1: such blocks ran inside the body, before the finish, and hung or trapped).
    enum CompletionAction: CustomStringConvertible {
        case none
        /// `waitUntilFinished()` on its own operation.
        case waitOwn
        /// `waitUntilFinished()` on an earlier operation.
        case waitEarlier(Int)
        /// `waitUntilAllOperationsAreFinished()` on its own queue.
        case waitQueue
        /// Takes the program's lock, which a `waitHoldingLock` step holds while it waits for an
        /// operation.
        case lock
        /// Adds a plain operation to its own queue.
        case addToQueue
        /// `cancelAllOperations()` on its own queue.
        case cancelQueue

        var description: String {
            switch self {
            case .none: return "-"
            case .waitOwn: return "waits for itself"
            case .waitEarlier(let on): return "waits for #\(on)"
            case .waitQueue: return "waits for its queue"
            case .lock: return "takes the lock"
            case .addToQueue: return "adds to its queue"
            case .cancelQueue: return "cancels its queue"
            }
        }

        /// Whether the block may block for a while (counted against the blocked bodies).
        var blocks: Bool {
            switch self {
            case .waitEarlier, .waitQueue, .lock: return true
            default: return false
            }
        }
    }

    struct Op {
        var queue: Int
        var kind: Kind = .plain
        var dependencies: [Int] = []
        var completion = false
        var completionAction: CompletionAction = .none
        var signals: [Int] = []  // waiters it releases
        var priority: Operation.QueuePriority?
        var qos: QualityOfService?
        var threadPriority: Double?
    }

    /// A Foundation operation added to the Foundation queue of a queue (grammar 2): ours is
    /// `queue.foundationQueue`, Foundation's a serial Foundation queue of its own.
    struct BridgeOp {
        /// The bridge operations it depends on (any order: added before or after it).
        var dependencies: [Int] = []
        var completion = false
    }

    enum Step: CustomStringConvertible {
        case add(Int)
        case cancel(Int)
        case cancelAll(queue: Int)
        case suspend(queue: Int)
        case resume(queue: Int)
        case setWidth(queue: Int, to: Int)
        case setPriority(op: Int, Operation.QueuePriority)
        case setQoS(queue: Int, QualityOfService)
        case barrier(queue: Int)
        case pause(micros: Int)
        /// A helper thread takes the program's lock and waits for the operation, holding it.
        case waitHoldingLock(op: Int)
        /// `addDependency` after the receiver was made and perhaps added (any order, DAG kept).
        case addDependency(op: Int, on: Int)
        /// Adds bridge operation `op` to the bridge.
        case bridgeAdd(Int)

        var description: String {
            switch self {
            case .add(let op): return "add #\(op)"
            case .cancel(let op): return "cancel #\(op)"
            case .cancelAll(let queue): return "cancelAll q\(queue)"
            case .suspend(let queue): return "suspend q\(queue)"
            case .resume(let queue): return "resume q\(queue)"
            case .setWidth(let queue, let to): return "q\(queue) width \(to)"
            case .setPriority(let op, let p): return "#\(op) priority \(p.rawValue)"
            case .setQoS(let queue, let q): return "q\(queue) qos \(q.rawValue)"
            case .barrier(let queue): return "barrier q\(queue)"
            case .pause(let micros): return "pause \(micros) µs"
            case .waitHoldingLock(let op): return "wait for #\(op) holding the lock"
            case .addDependency(let op, let on): return "#\(op) depends on #\(on)"
            case .bridgeAdd(let op): return "bridge add b\(op)"
            }
        }
    }

    let seed: UInt64
    /// 1: the generator the regression seeds were found with (kept as it was, so each replays
    /// its program); 2: with the grammar of issue 33 (completion-block actions, late
    /// dependencies, thread priorities, the Foundation-queue bridge, and the shapes of
    /// LivenessShapes.swift).
    let grammar: Int
    /// A program of another shape than the mixed one (grammar 2): a long graph, promotions in
    /// the thousands, a stream whose payloads are counted.
    var shape: LivenessShape?
    var queues: [Width] = []
    var ops: [Op] = []
    var steps: [Step] = []
    /// The queue whose Foundation queue the bridge operations go to, and them.
    var bridgeQueue: Int?
    var bridgeOps: [BridgeOp] = []

    var blockers: Int {
        ops.filter {
            switch $0.kind {
            case .invisibleWait, .visibleWait, .deinitWait: return true
            default: return $0.completionAction.blocks
            }
        }.count
    }

    /// The patterns in the program, for the summary of a failure.
    var features: [String] {
        var result: Set<String> = []
        for (index, op) in ops.enumerated() {
            switch op.kind {
            case .invisibleWait(let on, _):
                let same = ops[on].queue == op.queue
                result.insert("invisible wait on \(same ? "same" : "other") \(queues[op.queue]) queue")
            case .visibleWait: result.insert("visible wait")
            case .async(_, let finishesOnCancel):
                if finishesOnCancel,
                   steps.contains(where: { if case .cancel(index) = $0 { return true }; if case .cancelAll(op.queue) = $0 { return true }; return false }) {
                    result.insert("cancel-finishing async op cancelled")
                } else { result.insert("async op") }
            case .deinitWait: result.insert("deinit waits for its own queue")
            case .setWidth: result.insert("width change in a body")
            case .plain: break
            }
        }
        if steps.contains(where: { if case .barrier = $0 { return true }; return false }) { result.insert("barrier") }
        if steps.contains(where: { if case .suspend = $0 { return true }; return false }) { result.insert("suspend") }
        for op in ops {
            switch op.completionAction {
            case .none: break
            case .waitOwn, .waitEarlier, .waitQueue: result.insert("completion block waits")
            case .lock: result.insert("completion block takes a lock")
            case .addToQueue: result.insert("completion block adds to its queue")
            case .cancelQueue: result.insert("completion block cancels its queue")
            }
            if op.threadPriority != nil { result.insert("thread priority") }
        }
        if steps.contains(where: { if case .waitHoldingLock = $0 { return true }; return false }) { result.insert("wait holding a lock") }
        if steps.contains(where: { if case .addDependency = $0 { return true }; return false }) { result.insert("late dependency") }
        if !bridgeOps.isEmpty { result.insert("Foundation-queue bridge") }
        if let shape { result.insert(shape.feature) }
        return result.sorted()
    }

    var description: String {
        if let shape { return "program seed \(seed) (grammar \(grammar)): \(shape)" }
        var lines = ["program seed \(seed) (grammar \(grammar)): queues " + queues.enumerated().map { "q\($0.offset) \($0.element)" }.joined(separator: ", ")]
        for (index, op) in ops.enumerated() {
            var line = "  #\(index) q\(op.queue) \(op.kind)"
            if !op.dependencies.isEmpty { line += " deps \(op.dependencies.map { "#\($0)" }.joined(separator: ","))" }
            if !op.signals.isEmpty { line += " signals \(op.signals.map { "#\($0)" }.joined(separator: ","))" }
            if op.completion { line += " +completion" }
            if case .none = op.completionAction {} else { line += " (\(op.completionAction))" }
            if let priority = op.priority { line += " priority \(priority.rawValue)" }
            if let qos = op.qos { line += " qos \(qos.rawValue)" }
            if let threadPriority = op.threadPriority { line += " threadPriority \(threadPriority)" }
            lines.append(line)
        }
        if let bridgeQueue {
            lines.append("  bridge of q\(bridgeQueue): " + bridgeOps.enumerated().map { index, op in
                "b\(index)" + (op.dependencies.isEmpty ? "" : " deps " + op.dependencies.map { "b\($0)" }.joined(separator: ",")) + (op.completion ? " +completion" : "")
            }.joined(separator: "; "))
        }
        lines.append("  steps: " + steps.map(\.description).joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    static let maxBlockers = 4

    /// The grammar random programs are made with.
    static let currentGrammar = 2

    init(seed: UInt64, grammar: Int = LivenessProgram.currentGrammar) {
        self.seed = seed
        self.grammar = grammar
        if grammar >= 2 {
            // The shape comes from a stream of its own: a mixed program of grammar 2 is its
            // grammar-1 program with the new features on top.
            var shapes = LivenessRandom(seed: seed ^ 0x5EED_5EED_5EED_5EED)
            shape = LivenessShape.choose(&shapes)
            if shape != nil { return }
        }
        var random = LivenessRandom(seed: seed)
        let queueCount = random.int(1...3)
        for _ in 0..<queueCount {
            switch random.int(0...3) {
            case 0, 1: queues.append(.standard)
            case 2: queues.append(.serial)
            default: queues.append(.explicit(random.int(2...4)))
            }
        }
        let opCount = random.int(5...40)
        ops = (0..<opCount).map { _ in Op(queue: random.int(0...(queueCount - 1))) }

        var isSignaller = Array(repeating: false, count: opCount)
        var decided = Array(repeating: false, count: opCount)
        var waitersOn = Array(repeating: 0, count: queueCount)  // same-queue waiters on explicit queues
        var blockerCount = 0
        let priorities: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let qualities: [QualityOfService] = [.background, .utility, .default, .userInitiated, .userInteractive]

        /// May a blocked body on queue `waiterQueue` wait for an operation on `targetQueue`?
        func mayWait(from waiterQueue: Int, for targetQueue: Int) -> Bool {
            guard let width = queues[waiterQueue].count else { return true }
            if queues[targetQueue].count == nil { return true }
            return targetQueue == waiterQueue && waitersOn[waiterQueue] + 1 < width
        }

        for index in 0..<opCount {
            if decided[index] { continue }
            decided[index] = true
            let queue = ops[index].queue
            let roll = random.int(0...99)
            if roll < 18, blockerCount < LivenessProgram.maxBlockers, index + 1 < opCount {
                // An invisible waiter on a later operation that becomes (or already is) a signaller.
                let candidates = ((index + 1)..<opCount).filter { target in
                    (!decided[target] || isSignaller[target]) && mayWait(from: queue, for: ops[target].queue)
                }
                if !candidates.isEmpty {
                    let target = random.pick(candidates)
                    decided[target] = true
                    isSignaller[target] = true
                    ops[target].signals.append(index)
                    ops[target].completion = true
                    ops[index].kind = .invisibleWait(on: target, random.pick(Block.allCases))
                    if queues[queue].count != nil && ops[target].queue == queue { waitersOn[queue] += 1 }
                    blockerCount += 1
                    continue
                }
            }
            if roll >= 18 && roll < 26, blockerCount < LivenessProgram.maxBlockers, index > 0,
               queues[queue].count == nil {
                let candidates = (0..<index).filter { target in
                    if case .deinitWait = ops[target].kind { return false }
                    return true
                }
                if !candidates.isEmpty {
                    ops[index].kind = .visibleWait(on: random.pick(candidates))
                    blockerCount += 1
                    continue
                }
            }
            if roll >= 26 && roll < 46 {
                ops[index].kind = .async(after: random.int(0...3000), finishesOnCancel: random.chance(0.5))
                continue
            }
            if roll >= 46 && roll < 51, queues[queue].count == nil, blockerCount < LivenessProgram.maxBlockers {
                ops[index].kind = .deinitWait
                blockerCount += 1
                continue
            }
            if roll >= 51 && roll < 55 {
                let explicit = queues.indices.filter { queues[$0].count != nil }
                if !explicit.isEmpty {
                    let target = random.pick(explicit)
                    ops[index].kind = .setWidth(queue: target, to: newWidth(for: queues[target], &random))
                    continue
                }
            }
        }

        // Dependencies (on earlier operations only), completion blocks, priorities.
        for index in 0..<opCount {
            if case .deinitWait = ops[index].kind { continue }
            if !isSignaller[index], index > 0, random.chance(0.3) {
                let candidates = (0..<index).filter { if case .deinitWait = ops[$0].kind { return false }; return true }
                for _ in 0..<random.int(1...2) where !candidates.isEmpty {
                    let dependency = random.pick(candidates)
                    if !ops[index].dependencies.contains(dependency) { ops[index].dependencies.append(dependency) }
                }
            }
            if random.chance(0.6) { ops[index].completion = true }
            if random.chance(0.2) { ops[index].priority = random.pick(priorities) }
            if random.chance(0.1) { ops[index].qos = random.pick(qualities) }
        }

        // Steps: the adds in index order, with random actions between them.
        let signallerQueues = Set(ops.indices.filter { isSignaller[$0] }.map { ops[$0].queue })
        var suspended = Array(repeating: false, count: queueCount)
        let addable = ops.indices.filter { if case .deinitWait = ops[$0].kind { return false }; return true }
        for index in 0..<opCount {
            while random.chance(0.35) {
                let queue = random.int(0...(queueCount - 1))
                switch random.int(0...9) {
                case 0, 1:
                    // Cancel an added operation.
                    // Only added ones: Foundation on Linux deadlocks on its own queue lock when
                    // an operation cancelled before it was added goes to a suspended serial
                    // queue behind a barrier (seed 13106413651715530658, before this rule).
                    let candidates = addable.filter { $0 < index }
                    if !candidates.isEmpty { steps.append(.cancel(random.pick(candidates))) }
                case 2:
                    if random.chance(0.3) { steps.append(.cancelAll(queue: queue)) }
                case 3:
                    if suspended[queue] { steps.append(.resume(queue: queue)) } else { steps.append(.suspend(queue: queue)) }
                    suspended[queue].toggle()
                case 4:
                    if queues[queue].count != nil {
                        steps.append(.setWidth(queue: queue, to: newWidth(for: queues[queue], &random)))
                    }
                case 5:
                    let candidates = addable.filter { $0 <= index }
                    if !candidates.isEmpty { steps.append(.setPriority(op: random.pick(candidates), random.pick(priorities))) }
                case 6:
                    steps.append(.setQoS(queue: queue, random.pick(qualities)))
                case 7:
                    if !signallerQueues.contains(queue) { steps.append(.barrier(queue: queue)) }
                default:
                    steps.append(.pause(micros: random.int(0...2000)))
                }
            }
            steps.append(.add(index))
        }
        for queue in 0..<queueCount where suspended[queue] || random.chance(0.2) {
            if random.chance(0.5) { steps.append(.pause(micros: random.int(0...2000))) }
            steps.append(.resume(queue: queue))
        }
        if grammar >= 2 { addGrammarTwo(&random, isSignaller: isSignaller, blockerCount: blockerCount) }
    }

    /// Grammar 2's features on top of the grammar-1 program (drawn after all of its draws, so
    /// the program underneath is the same).
    private mutating func addGrammarTwo(_ random: inout LivenessRandom, isSignaller: [Bool], blockerCount: Int) {
        var blockerCount = blockerCount
        let opCount = ops.count
        let isPlaceholder = ops.map { if case .deinitWait = $0.kind { return true }; return false }
        // Completion-block actions and thread priorities.
        for index in 0..<opCount where ops[index].completion && !isPlaceholder[index] && random.chance(0.4) {
            var action: CompletionAction
            switch random.int(0...6) {
            case 0: action = .waitOwn
            case 1: action = index > 0 ? .waitEarlier(random.int(0...(index - 1))) : .waitOwn
            case 2: action = .waitQueue
            case 3, 4: action = .lock
            case 5: action = .addToQueue
            default: action = .cancelQueue
            }
            if case .waitEarlier(let on) = action, isPlaceholder[on] { action = .waitOwn }
            if action.blocks {
                if blockerCount >= LivenessProgram.maxBlockers { continue }
                blockerCount += 1
            }
            ops[index].completionAction = action
        }
        for index in 0..<opCount where !isPlaceholder[index] && random.chance(0.1) {
            ops[index].threadPriority = random.pick([0.0, 0.25, 0.75, 1.0])
        }
        // Late dependencies, added by steps after the receiver was made (perhaps after it was
        // added to its queue, perhaps on an operation added later): a DAG is kept, and no
        // signaller gets one (its waiters hold slots until it ran).
        // What each operation's finish waits for: its dependencies and what its body waits for
        // (a late dependency must not close a cycle through a wait either).
        var barrierFences: [[Set<Int>]] = Array(repeating: [], count: queues.count)
        var dependsOn: [Set<Int>] = ops.map { op in
            var waits = Set(op.dependencies)
            switch op.kind {
            case .visibleWait(let on), .invisibleWait(let on, _): waits.insert(on)
            default: break
            }
            return waits
        }
        // A barrier makes what is added to its queue after it wait for everything added before it
        // (seed 14358773905471802739: #4, before a barrier, was made to depend on #11, after it).
        var addedBefore: [[Int]] = Array(repeating: [], count: queues.count)  // per queue, in add order
        for step in steps {
            switch step {
            case .add(let op):
                if !isPlaceholder[op] {
                    for barrierWaitsFor in barrierFences[ops[op].queue] { dependsOn[op].formUnion(barrierWaitsFor) }
                }
                addedBefore[ops[op].queue].append(op)
            case .barrier(let queue):
                barrierFences[queue].append(Set(addedBefore[queue]))
            default: break
            }
        }
        func reaches(_ from: Int, _ target: Int) -> Bool {
            var stack = [from], seen: Set<Int> = [from]
            while let next = stack.popLast() {
                if next == target { return true }
                for dependency in dependsOn[next] where seen.insert(dependency).inserted { stack.append(dependency) }
            }
            return false
        }
        var withLate: [Step] = []
        for step in steps {
            withLate.append(step)
            guard random.chance(0.08) else { continue }
            let receiver = random.int(0...(opCount - 1))
            let target = random.int(0...(opCount - 1))
            if receiver == target || isSignaller[receiver] || isPlaceholder[receiver] || isPlaceholder[target] { continue }
            if dependsOn[receiver].contains(target) || reaches(target, receiver) { continue }
            dependsOn[receiver].insert(target)
            withLate.append(.addDependency(op: receiver, on: target))
        }
        steps = withLate
        // Waits that hold the program's lock (against completion blocks that take it).
        let lockTakers = (0..<opCount).filter { if case .lock = ops[$0].completionAction { return true }; return false }
        if !lockTakers.isEmpty {
            for _ in 0..<random.int(1...2) {
                let target = random.chance(0.7) ? random.pick(lockTakers) : random.int(0...(opCount - 1))
                if isPlaceholder[target] { continue }
                steps.insert(.waitHoldingLock(op: target), at: random.int(0...steps.count))
            }
        }
        // The bridge: Foundation operations with dependencies among them, added in any order
        // (a dependent often before its dependency) to the Foundation queue of one queue.
        if random.chance(0.3) {
            let bridged = random.int(0...(queues.count - 1))
            bridgeQueue = bridged
            let count = random.int(2...8)
            bridgeOps = (0..<count).map { _ in BridgeOp() }
            // Edges from a higher to a lower index of a hidden order: a DAG; the adds follow a
            // random permutation.
            for index in 1..<count where random.chance(0.6) {
                let dependency = random.int(0...(index - 1))
                bridgeOps[index].dependencies.append(dependency)
            }
            for index in 0..<count where random.chance(0.5) { bridgeOps[index].completion = true }
            var order = Array(0..<count)
            for i in stride(from: count - 1, to: 0, by: -1) { order.swapAt(i, random.int(0...i)) }
            for op in order { steps.insert(.bridgeAdd(op), at: random.int(0...steps.count)) }
            if random.chance(0.3) { steps.insert(.cancelAll(queue: bridged), at: random.int(0...steps.count)) }
        }
    }

    /// A width for an explicit-width queue: never below its initial width (the waiters counted
    /// against it stay below), or the default.
    private func newWidth(for width: Width, _ random: inout LivenessRandom) -> Int {
        let initial = width.count ?? 1
        return random.chance(0.25) ? OperationQueue.defaultMaxConcurrentOperationCount : random.int(initial...(initial + 2))
    }
}
