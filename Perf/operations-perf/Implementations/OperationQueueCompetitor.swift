// OperationQueueCompetitor.swift — the workloads written once against the Operation /
// OperationQueue API; `OperationsAPI` (ours) and `FoundationAPI` plug their types in.
import DispatchBaselines

/// One library's Operation / OperationQueue: the two calls whose spelling differs (creating a
/// queue and a BlockOperation); everything else goes through `PerfOperationQueue`.
protocol OperationQueueAPI: SendableMetatype {
    associatedtype Queue: PerfOperationQueue
    /// The competitor's name.
    static var name: String { get }
    /// `OperationQueue()`.
    static func newQueue() -> Queue
    /// `BlockOperation(block: body)`.
    static func makeOperation(_ body: @escaping @Sendable () -> Void) -> Queue.Op
    /// Whether queues can be placed on CPUs, and placing one (W9 placed).
    static var canPlace: Bool { get }
    static func place(_ queue: Queue, on cpus: [Int])
}

/// The OperationQueue calls the workloads use; ours and Foundation's have them under these
/// names, so each conforms with an empty extension.
protocol PerfOperationQueue: AnyObject, SendableMetatype {
    associatedtype Op: PerfOperation
    associatedtype QoS: RawRepresentable<Int>
    var maxConcurrentOperationCount: Int { get set }
    var isSuspended: Bool { get set }
    var qualityOfService: QoS { get set }
    func addOperation(_ op: Op)
    func addOperations(_ ops: [Op], waitUntilFinished: Bool)
    func waitUntilAllOperationsAreFinished()
}

/// The Operation calls the workloads use (as for `PerfOperationQueue`).
protocol PerfOperation: AnyObject, SendableMetatype {
    associatedtype QoS: RawRepresentable<Int>
    associatedtype Priority: RawRepresentable<Int>
    var qualityOfService: QoS { get set }
    var queuePriority: Priority { get set }
    /// Sets `threadPriority` where the library has it (Foundation on Linux does not).
    func setThreadPriority(_ value: Double)
    func addDependency(_ op: Self)
    func start()
    func waitUntilFinished()
}

/// The QoS classes, named once for every library.
enum PerfQoS: Int, CaseIterable, Sendable {
    case background, utility, `default`, userInitiated, userInteractive

    /// The library's enum case of this name.
    func value<T: RawRepresentable<Int>>(_ type: T.Type = T.self) -> T { T.named("\(self)") }
}

extension RawRepresentable where RawValue == Int {
    /// The case called `name`, found by trying raw values -64 … 64: ours and Foundation's enums
    /// share their case names but not their raw values. For setup, not for timed sections.
    static func named(_ name: String) -> Self {
        guard let value = (-64...64).lazy.compactMap(Self.init(rawValue:)).first(where: { "\($0)" == name }) else {
            fatalError("\(Self.self) has no case \(name)")
        }
        return value
    }
}

extension OperationQueueAPI {
    static var canPlace: Bool { false }
    static func place(_ queue: Queue, on cpus: [Int]) { fatalError("\(name) cannot place queues") }

    /// A new queue of `width` at `qos` (nil: the library's default QoS).
    static func makeQueue(width: QueueWidth, qos: PerfQoS?) -> Queue {
        let queue = newQueue()
        if case .serial = width { queue.maxConcurrentOperationCount = 1 }
        if let qos { queue.qualityOfService = qos.value() }
        return queue
    }
}

/// A competitor that runs every workload through `API`'s operations and queues. The timed
/// loops are specialised for both APIs: generic code would look up `API`'s associated types on
/// every operation, a cost neither library has.
struct OperationQueueCompetitor<API: OperationQueueAPI>: Competitor {
    var name: String { API.name }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runEach(_ n: Int, width: QueueWidth, counter: Counter) throws -> UInt64 {
        let queue = API.makeQueue(width: width, qos: nil)
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.addOperation(API.makeOperation { counter.countOne() }) }
        queue.waitUntilAllOperationsAreFinished()
        return Clock.nanoseconds() - start
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runEach(_ n: Int, body: CBody, context: UnsafeMutableRawPointer) throws -> UInt64 {
        let queue = API.makeQueue(width: .default, qos: nil)
        let context = Handed(context)
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.addOperation(API.makeOperation { body(context.value) }) }
        queue.waitUntilAllOperationsAreFinished()
        return Clock.nanoseconds() - start
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runProducers(_ n: Int, producers: Int, counter: Counter) throws -> UInt64 {
        let queue = Handed(API.makeQueue(width: .default, qos: nil))
        return try ProducerThreads.run(producers, items: n, add: { share in
            for _ in 0..<share { queue.value.addOperation(API.makeOperation { counter.countOne() }) }
        }, wait: { queue.value.waitUntilAllOperationsAreFinished() })
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runSpawn(fan: Int, depth: Int, counter: Counter) throws -> UInt64 {
        let queue = API.makeQueue(width: .default, qos: nil)
        let start = Clock.nanoseconds()
        queue.addOperation(Self.spawnNode(levelsBelow: depth, fan: fan, queue: Handed(queue), counter: counter))
        // Children are added before their parent finishes, so the queue is never empty before
        // the whole tree ran.
        queue.waitUntilAllOperationsAreFinished()
        return Clock.nanoseconds() - start
    }

    /// An S3 node: counts one, then adds `fan` nodes one level down to its own queue.
    private static func spawnNode(levelsBelow: Int, fan: Int, queue: Handed<API.Queue>, counter: Counter) -> API.Queue.Op {
        API.makeOperation {
            counter.countOne()
            guard levelsBelow > 0 else { return }
            for _ in 0..<fan {
                queue.value.addOperation(spawnNode(levelsBelow: levelsBelow - 1, fan: fan, queue: queue, counter: counter))
            }
        }
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runBatch(_ n: Int, counter: Counter) throws -> UInt64? {
        let queue = API.makeQueue(width: .default, qos: nil)
        let start = Clock.nanoseconds()
        var ops: [API.Queue.Op] = []
        ops.reserveCapacity(n)
        for _ in 0..<n { ops.append(API.makeOperation { counter.countOne() }) }
        queue.addOperations(ops, waitUntilFinished: true)
        return Clock.nanoseconds() - start
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runByHand(_ n: Int, counter: Counter) throws -> UInt64? {
        let start = Clock.nanoseconds()
        for _ in 0..<n { API.makeOperation { counter.countOne() }.start() }
        return Clock.nanoseconds() - start
    }

    /// Each `BlockOperation(block:)` made on the calling thread, exactly as W1 makes it, and
    /// released on the consumer without running: its block never runs (the consumer counts).
    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runHandOff(_ n: Int, counter: Counter) throws -> UInt64? {
        try HandOffRing.run(n, counter: counter, make: {
            Unmanaged.passRetained(API.makeOperation { counter.countOne() }).toOpaque()
        }, release: { Unmanaged<API.Queue.Op>.fromOpaque($0).release() })
    }

    @_specialize(where API == OperationsAPI)
    @_specialize(where API == FoundationAPI)
    func runGraph(_ graph: TaskGraph, counter: Counter) throws -> UInt64 {
        let queue = API.makeQueue(width: .default, qos: nil)
        let start = Clock.nanoseconds()
        var ops: [API.Queue.Op] = []
        ops.reserveCapacity(graph.count)
        for item in 0..<graph.count {
            let op = API.makeOperation { counter.countOne() }
            for predecessor in graph.predecessors(of: item) { op.addDependency(ops[Int(predecessor)]) }
            ops.append(op)
        }
        for op in ops { queue.addOperation(op) }
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = Clock.nanoseconds() - start
        // Last first: each op keeps its dependencies alive, so dropping the array front to back
        // frees the whole chain recursively from its last op and overflows the stack at 10^5.
        while !ops.isEmpty { ops.removeLast() }
        return elapsed
    }

    func makeProbeTarget(_ layout: ProbeLayout) throws -> any ProbeTarget {
        OperationProbeTarget<API>(layout: layout)
    }

    var canPlace: Bool { API.canPlace }
    var canLimitWidth: Bool { true }

    func makeInversionPairs() throws -> (any InversionPairs)? {
        OperationInversionPairs<API>()
    }

    func makeSuspendedQueue() throws -> any SuspendedQueue {
        OperationSuspendedQueue<API>()
    }
}

/// W7 / W9 queues of `API`.
private struct OperationProbeTarget<API: OperationQueueAPI>: ProbeTarget {
    let layout: ProbeLayout
    let loadQueue: API.Queue
    let probeQueue: API.Queue

    /// One queue: each op's own QoS, and the probes' queue priority.
    let probeQoS: API.Queue.Op.QoS = PerfQoS.userInteractive.value()
    let loadQoS: API.Queue.Op.QoS = PerfQoS.background.value()
    let veryHigh = API.Queue.Op.Priority.named("veryHigh")

    init(layout: ProbeLayout) {
        self.layout = layout
        switch layout {
        case .plain, .oneQueue:
            loadQueue = API.makeQueue(width: .default, qos: nil)
            probeQueue = loadQueue
        case .oneQueueOfWidth(let width):
            loadQueue = API.makeQueue(width: .default, qos: nil)
            loadQueue.maxConcurrentOperationCount = width
            probeQueue = loadQueue
        case .twoQueues:
            loadQueue = API.makeQueue(width: .default, qos: .background)
            probeQueue = API.makeQueue(width: .default, qos: .userInteractive)
        case .placed(let probeCPU, let loadCPUs):
            loadQueue = API.makeQueue(width: .default, qos: .background)
            probeQueue = API.makeQueue(width: .default, qos: .userInteractive)
            API.place(loadQueue, on: loadCPUs)
            API.place(probeQueue, on: [probeCPU])
        }
    }

    func submit(_ slot: ProbeSlot, _ kind: ProbeKind) {
        let op = API.makeOperation { slot.run(kind) }
        switch layout {
        case .oneQueue(let probeThreadPriority):
            op.qualityOfService = kind == .probe ? probeQoS : loadQoS
            if kind == .probe { op.queuePriority = veryHigh }
            if kind == .probe, let probeThreadPriority { op.setThreadPriority(probeThreadPriority) }
        case .oneQueueOfWidth:
            op.qualityOfService = kind == .probe ? probeQoS : loadQoS
            if kind == .probe { op.queuePriority = veryHigh }
        case .plain, .twoQueues, .placed:
            break
        }
        let queue = kind == .probe ? probeQueue : loadQueue
        slot.markSubmitted()
        queue.addOperation(op)
    }

    func close() {
        loadQueue.waitUntilAllOperationsAreFinished()
        probeQueue.waitUntilAllOperationsAreFinished()
    }
}

/// W12 pairs of `API`: the background operation on a background queue of its own, the waiter on a
/// userInteractive queue.
private struct OperationInversionPairs<API: OperationQueueAPI>: InversionPairs {
    let targetQueue = API.makeQueue(width: .default, qos: .background)
    let waiterQueue = API.makeQueue(width: .default, qos: .userInteractive)

    func submit(depends: Bool, target: ProbeSlot, waiter: ProbeSlot) {
        let work = API.makeOperation { perf_inversion_target_body(UnsafeMutableRawPointer(target.pointer)) }
        let end: API.Queue.Op
        if depends {
            end = API.makeOperation { perf_probe_body(UnsafeMutableRawPointer(waiter.pointer)) }
            end.addDependency(work)
        } else {
            let awaited = Handed(work)
            end = API.makeOperation {
                awaited.value.waitUntilFinished()
                perf_probe_body(UnsafeMutableRawPointer(waiter.pointer))
            }
        }
        waiter.markSubmitted()
        targetQueue.addOperation(work)
        waiterQueue.addOperation(end)
    }

    func close() {
        waiterQueue.waitUntilAllOperationsAreFinished()
        targetQueue.waitUntilAllOperationsAreFinished()
    }
}

/// A suspended default-width queue of `API` (W8).
private struct OperationSuspendedQueue<API: OperationQueueAPI>: SuspendedQueue {
    let queue = API.makeQueue(width: .default, qos: nil)

    init() { queue.isSuspended = true }

    func fill(_ n: Int) {
        // Refers to the shared counter instead of capturing one: no closure context per item.
        for _ in 0..<n { queue.addOperation(API.makeOperation { W8Memory.counter.countOne() }) }
    }

    func resumeAndDrain() {
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }
}
