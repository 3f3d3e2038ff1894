// LivenessShapes.swift — the liveness fuzzer's program shapes beside the mixed program
// (grammar 2, issue 33): one step off the paths the mixed programs take, where the runtime hung,
// crashed or held memory while the mixed programs passed.
//
// - graph: a chain, ladder or fan-in of 10^3–10^5 operations over one to three queues (serial or
//   default width), its dependencies added in a random order and its operations added in another
//   (a dependent often before its dependency), the queues perhaps suspended meanwhile and one of
//   them perhaps cancelled; then a wait on the last operation (blocking, async, or on every
//   queue). Checks: each operation ran once or ended cancelled, and in dependency order. (Item 2:
//   a wait on the last of a chain of 10^5 overflowed the stack.)
// - promotions: more than 4 095 higher-QoS operations waiting on a serial background queue, or a
//   higher-QoS operation depending on more than 4 095 unstarted operations of a background queue.
//   Checks (Operations only): afterwards an operation added to the queue is not promoted. (Item 5:
//   the counts overflowed into the next class and left the queue raised for good.)
// - stream: a producer keeps a backlog of operations on a queue (serial or default width), each
//   capturing a payload. Checks (Operations only): the payloads alive at once stay within the
//   backlog plus a batch per draining worker. (Item 7: finished operations were held until a
//   starved compaction: up to 10x the backlog.)
import Synchronization
import Testing

/// A program shape other than the mixed program.
enum LivenessShape: CustomStringConvertible {
    case graph(Graph)
    case promotions(Promotions)
    case stream(Stream)

    struct Graph {
        enum Form: String { case chain, ladder, fanIn = "fan-in" }
        enum Wait: String { case blocking, async, queues }
        var form: Form
        var count: Int
        /// Each queue's width: 1 or the default.
        var widths: [Int]
        var suspendWhileAdding: Bool
        var wait: Wait
        /// A queue whose operations are cancelled before it resumes.
        var cancelledQueue: Int?
        /// Seeds the orders of the edges and of the adds.
        var orderSeed: UInt64
    }

    struct Promotions {
        enum Form: String { case serialQueue = "on a serial queue", dependency = "as dependencies" }
        var form: Form
        var count: Int
        /// The promoting operations' class (below userInteractive: an overflow of its count
        /// would land in a real class).
        var qos: QualityOfService
    }

    struct Stream {
        var backlog: Int
        var total: Int
        var serial: Bool
    }

    /// The shapes LIVENESS_FUZZ_SHAPES allows (a comma-separated list of mixed, graph,
    /// promotions, stream; all when unset): to aim a run at one pattern. A seed whose shape is
    /// left out becomes a mixed program.
    static let allowed: Set<String>? = getenv("LIVENESS_FUZZ_SHAPES").map {
        Set(String(cString: $0).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    /// One program in five of grammar 2 has another shape; nil: the mixed program.
    static func choose(_ random: inout LivenessRandom) -> LivenessShape? {
        let shape = draw(&random)
        guard let allowed else { return shape }
        let name = switch shape {
        case nil: "mixed"
        case .graph: "graph"
        case .promotions: "promotions"
        case .stream: "stream"
        }
        return allowed.contains(name) ? shape : nil
    }

    private static func draw(_ random: inout LivenessRandom) -> LivenessShape? {
        let roll = random.int(0...99)
        if roll < 80 { return nil }
        if roll < 88 {
            let count = 1_000 << random.int(0...6)  // 1 000 … 64 000
            let queueCount = random.int(1...3)
            return .graph(Graph(
                form: random.pick([.chain, .chain, .ladder, .fanIn]),
                count: min(count + random.int(0...999), 100_000),
                widths: (0..<queueCount).map { _ in random.chance(0.5) ? 1 : OperationQueue.defaultMaxConcurrentOperationCount },
                suspendWhileAdding: random.chance(0.6),
                wait: random.pick([.blocking, .async, .queues]),
                cancelledQueue: random.chance(0.2) ? random.int(0...(queueCount - 1)) : nil,
                orderSeed: random.next()))
        }
        if roll < 94 {
            return .promotions(Promotions(
                form: random.chance(0.5) ? .serialQueue : .dependency,
                count: 4_096 + random.int(0...1_500),
                qos: random.pick([.utility, .default, .userInitiated])))
        }
        let backlog = random.pick([200, 1_000, 3_000])
        return .stream(Stream(backlog: backlog, total: backlog * 20, serial: random.chance(0.5)))
    }

    /// The deadline of a program of this shape.
    var deadline: Double {
        switch self {
        case .graph: return onFoundation ? 120 : 60
        case .promotions, .stream: return onFoundation ? 60 : 30
        }
    }

    var feature: String {
        switch self {
        case .graph(let graph): return "long \(graph.form.rawValue)"
        case .promotions(let promotions): return "promotions in the thousands \(promotions.form.rawValue)"
        case .stream: return "payloads of a stream counted"
        }
    }

    var description: String {
        switch self {
        case .graph(let g):
            return "graph: \(g.form.rawValue) of \(g.count) operations on \(g.widths.count) queues (widths \(g.widths)), "
                + "\(g.suspendWhileAdding ? "suspended while adding, " : "")\(g.cancelledQueue.map { "q\($0) cancelled, " } ?? "")"
                + "wait: \(g.wait.rawValue), order seed \(g.orderSeed)"
        case .promotions(let p):
            return "promotions: \(p.count) operations of \(p.qos) \(p.form.rawValue) on a background queue"
        case .stream(let s):
            return "stream: \(s.total) operations, backlog \(s.backlog), \(s.serial ? "serial" : "default width")"
        }
    }
}

/// The state of a shaped program's run.
final class LivenessShapeRun: @unchecked Sendable {
    let shape: LivenessShape
    let progress: Locked<String>
    /// The queues it made (for the report of a hang).
    let queues = Locked<[OperationQueue]>([])
    /// Problems found once it completed.
    private let problems = Locked<[String]>([])

    init(_ shape: LivenessShape, progress: Locked<String>) {
        self.shape = shape
        self.progress = progress
    }

    func run() {
        switch shape {
        case .graph(let graph): run(graph)
        case .promotions(let promotions): run(promotions)
        case .stream(let stream): run(stream)
        }
    }

    func check() -> [String] { problems.withLock { $0 } }

    func unblockEverything() {
        for queue in queues.withLock({ $0 }) { queue.isSuspended = false }
    }

    private func problem(_ text: String) { problems.withLock { $0.append(text) } }

    private func makeQueue(width: Int, qos: QualityOfService? = nil, name: String) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = name
        queue.maxConcurrentOperationCount = width
        if let qos { queue.qualityOfService = qos }
        queues.withLock { $0.append(queue) }
        return queue
    }

    // MARK: - Graph

    private func run(_ graph: LivenessShape.Graph) {
        var random = LivenessRandom(seed: graph.orderSeed)
        let count = graph.count
        let queues = graph.widths.enumerated().map { makeQueue(width: $0.element, name: "liveness graph q\($0.offset)") }
        // Each body takes a ticket: the order the operations ran in.
        let clock = Atomic<Int>(0)
        let tickets = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
        tickets.initialize(repeating: 0)
        defer { tickets.deallocate() }
        final class Tickets: @unchecked Sendable {
            let base: UnsafeMutablePointer<Int>
            init(_ base: UnsafeMutablePointer<Int>) { self.base = base }
        }
        let box = Tickets(tickets.baseAddress!)
        progress.withLock { $0 = "graph: making \(count) operations" }
        var operations: [Operation] = []
        operations.reserveCapacity(count)
        let reruns = Atomic<Int>(0)
        for index in 0..<count {
            let operation = BlockOperation { [box] in
                if box.base[index] != 0 { reruns.add(1, ordering: .relaxed) } // a second run
                box.base[index] = clock.add(1, ordering: .relaxed).newValue
            }
            operations.append(operation)
        }
        // The edges, as (dependent, dependency).
        var edges: [(Int, Int)] = []
        switch graph.form {
        case .chain: for index in 1..<count { edges.append((index, index - 1)) }
        case .ladder:
            for index in 1..<count {
                edges.append((index, index - 1))
                if index > 1 { edges.append((index, index - 2)) }
            }
        case .fanIn: for index in 0..<(count - 1) { edges.append((count - 1, index)) }
        }
        for i in stride(from: edges.count - 1, to: 0, by: -1) { edges.swapAt(i, random.int(0...i)) }
        progress.withLock { $0 = "graph: adding \(edges.count) dependencies in a random order" }
        for (dependent, dependency) in edges { operations[dependent].addDependency(operations[dependency]) }
        if graph.suspendWhileAdding { for queue in queues { queue.isSuspended = true } }
        var order = Array(0..<count)
        for i in stride(from: count - 1, to: 0, by: -1) { order.swapAt(i, random.int(0...i)) }
        progress.withLock { $0 = "graph: adding the operations in a random order" }
        for index in order { queues[index % queues.count].addOperation(operations[index]) }
        if let cancelled = graph.cancelledQueue { queues[cancelled].cancelAllOperations() }
        for queue in queues { queue.isSuspended = false }
        let last = operations[count - 1]
        progress.withLock { $0 = "graph: \(graph.wait.rawValue) wait" }
        switch graph.wait {
        case .blocking: last.waitUntilFinished()
        case .async:
            #if BEHAVIOUR_ON_FOUNDATION
            last.waitUntilFinished() // Foundation has no async wait
            #else
            let done = Latch()
            Task { await last.waitUntilFinished(); done.open() }
            while !done.wait(for: 1, seconds: 1) {}
            #endif
        case .queues: break
        }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        progress.withLock { $0 = "graph: checking" }
        var bad = 0
        for (index, operation) in operations.enumerated() {
            let ran = tickets[index] != 0
            if !operation.isFinished || (!operation.isCancelled && !ran) {
                bad += 1
                if bad <= 5 { problem("op \(index): finished \(operation.isFinished), cancelled \(operation.isCancelled), ran \(ran)") }
            }
        }
        for (dependent, dependency) in edges where tickets[dependent] != 0 && tickets[dependency] != 0 {
            if tickets[dependent] < tickets[dependency] {
                problem("op \(dependent) ran before its dependency \(dependency)")
                break
            }
        }
        if bad > 5 { problem("\(bad) operations in all") }
        if reruns.load(ordering: .relaxed) != 0 { problem("\(reruns.load(ordering: .relaxed)) operations ran twice") }
        // Freed from the last, without recursion (ChainRelease).
        while !operations.isEmpty { operations.removeLast() }
    }

    // MARK: - Promotions

    private func run(_ promotions: LivenessShape.Promotions) {
        let background = makeQueue(width: promotions.form == .serialQueue ? 1 : OperationQueue.defaultMaxConcurrentOperationCount,
                                   qos: .background, name: "liveness promoted queue")
        background.isSuspended = true
        progress.withLock { $0 = "promotions: \(promotions.count) operations" }
        switch promotions.form {
        case .serialQueue:
            // Each operation of a class above the serial queue's raises it while it waits.
            var operations: [Operation] = []
            for _ in 0..<promotions.count {
                let operation = BlockOperation {}
                operation.qualityOfService = promotions.qos
                operations.append(operation)
            }
            background.addOperations(operations, waitUntilFinished: false)
            background.isSuspended = false
            background.waitUntilAllOperationsAreFinished()
        case .dependency:
            let dependencies = (0..<promotions.count).map { _ in BlockOperation {} }
            background.addOperations(dependencies, waitUntilFinished: false)
            let sink = BlockOperation {}
            sink.qualityOfService = promotions.qos
            for dependency in dependencies { sink.addDependency(dependency) }
            let other = makeQueue(width: OperationQueue.defaultMaxConcurrentOperationCount, name: "liveness promoting queue")
            other.addOperation(sink)
            background.isSuspended = false
            sink.waitUntilFinished()
            background.waitUntilAllOperationsAreFinished()
        }
        #if !BEHAVIOUR_ON_FOUNDATION
        // Every promotion ended with its operation: what runs on the queue now is not raised.
        progress.withLock { $0 = "promotions: probing the queue" }
        let probe = BlockOperation {}
        background.addOperation(probe)
        probe.waitUntilFinished()
        if let raised = probe.promotedQualityOfService {
            problem("after \(promotions.count) promotions to \(promotions.qos) \(promotions.form.rawValue), the queue still runs its work at \(raised)")
        }
        #endif
    }

    // MARK: - Stream

    private func run(_ stream: LivenessShape.Stream) {
        let queue = makeQueue(width: stream.serial ? 1 : OperationQueue.defaultMaxConcurrentOperationCount, name: "liveness stream")
        let permits = DispatchSemaphore(value: stream.backlog)
        let captures = LiveCapture.Count()
        progress.withLock { $0 = "stream: \(stream.total) operations" }
        for _ in 0..<stream.total {
            while permits.wait(timeout: .now() + 1) != .success {}
            let capture = LiveCapture(captures)
            queue.addOperation {
                capture.touch()
                permits.signal()
            }
        }
        queue.waitUntilAllOperationsAreFinished()
        #if !BEHAVIOUR_ON_FOUNDATION
        // The backlog, plus what finished and waits for release: a batch per draining worker
        // (LivenessTests.busyQueueReleasesFinishedOperationsBesideACPUHog has the reasoning).
        let perDrainer = 2 * max(32, 256 / onlineCPUs)
        let drainers = stream.serial ? 1 : onlineCPUs
        let bound = stream.backlog + max(1_000, perDrainer * drainers + 100)
        if captures.peak > bound {
            problem("\(captures.peak) payloads alive at once with a backlog of \(stream.backlog) (bound \(bound))")
        }
        #endif
    }
}
