// CoreCompetitor.swift — `core`: the workloads through our C API directly (OperationsCore):
// op_queue_submit_f for items without a handle, op_task_create + dependencies for graphs.
import DispatchBaselines
import OperationsCore

/// Our C core. Every item runs the same C body as on dispatch, so the two differ only in the
/// runtime.
struct CoreCompetitor: Competitor {
    var name: String { "core" }

    func runEach(_ n: Int, width: QueueWidth, counter: Counter) throws -> UInt64 {
        let queue = try makeQueue(width: width)
        defer { op_queue_release(queue) }
        let start = Clock.nanoseconds()
        for _ in 0..<n { op_queue_submit_f(queue, baseline_count_one, counter.pointer) }
        try wait(queue)
        return Clock.nanoseconds() - start
    }

    func runEach(_ n: Int, body: CBody, context: UnsafeMutableRawPointer) throws -> UInt64 {
        let queue = try makeQueue(width: .default)
        defer { op_queue_release(queue) }
        let start = Clock.nanoseconds()
        for _ in 0..<n { op_queue_submit_f(queue, body, context) }
        try wait(queue)
        return Clock.nanoseconds() - start
    }

    func runProducers(_ n: Int, producers: Int, counter: Counter) throws -> UInt64 {
        let queue = Handed(try makeQueue(width: .default))
        defer { op_queue_release(queue.value) }
        return try ProducerThreads.run(producers, items: n, add: { share in
            for _ in 0..<share { op_queue_submit_f(queue.value, baseline_count_one, counter.pointer) }
        }, wait: { try wait(queue.value) })
    }

    /// One `CoreSpawnLevel` per level; each task's context is its level.
    func runSpawn(fan: Int, depth: Int, counter: Counter) throws -> UInt64 {
        let queue = try makeQueue(width: .default)
        defer { op_queue_release(queue) }
        let levels = UnsafeMutablePointer<CoreSpawnLevel>.allocate(capacity: depth + 1)
        defer { levels.deallocate() }
        for level in 0...depth {
            (levels + level).initialize(to: CoreSpawnLevel(
                queue: queue, counter: counter.pointer, fan: fan, next: level < depth ? levels + level + 1 : nil))
        }
        let start = Clock.nanoseconds()
        op_queue_submit_f(queue, coreSpawnStep, levels)
        try wait(queue) // covers tasks submitted while it waits
        return Clock.nanoseconds() - start
    }

    /// `op_queue_submit_batch` of `n` tasks created in the timed section, then a queue wait.
    func runBatch(_ n: Int, counter: Counter) throws -> UInt64? {
        let queue = try makeQueue(width: .default)
        defer { op_queue_release(queue) }
        var tasks = [OpaquePointer?](repeating: nil, count: n)
        let start = Clock.nanoseconds()
        for i in 0..<n { tasks[i] = op_task_create(baseline_count_one, counter.pointer, nil) }
        let rc = tasks.withUnsafeBufferPointer { op_queue_submit_batch(queue, $0.baseAddress, n) }
        guard rc == 0 else { throw PerfError.setup("op_queue_submit_batch returned \(rc)") }
        try wait(queue)
        let elapsed = Clock.nanoseconds() - start
        for task in tasks { op_task_release(task) }
        return elapsed
    }

    /// Each task created, its body called, completed by hand (never submitted) and released.
    func runByHand(_ n: Int, counter: Counter) throws -> UInt64? {
        let start = Clock.nanoseconds()
        for _ in 0..<n {
            guard let task = op_task_create(baseline_count_one, counter.pointer, nil) else {
                throw PerfError.setup("op_task_create failed")
            }
            baseline_count_one(counter.pointer)
            op_task_complete(task)
            op_task_release(task)
        }
        return Clock.nanoseconds() - start
    }

    /// Each task created with op_task_create on the calling thread and dropped with
    /// op_task_release on the consumer.
    func runHandOff(_ n: Int, counter: Counter) throws -> UInt64? {
        try HandOffRing.run(n, counter: counter, make: {
            UnsafeMutableRawPointer(op_task_create(baseline_count_one, counter.pointer, nil)!)
        }, release: { op_task_release(OpaquePointer($0)) })
    }

    /// All tasks created and linked, then submitted in order (handles released after submit),
    /// then a queue wait.
    func runGraph(_ graph: TaskGraph, counter: Counter) throws -> UInt64 {
        let queue = try makeQueue(width: .default)
        defer { op_queue_release(queue) }
        var tasks = [OpaquePointer?](repeating: nil, count: graph.count)
        let start = Clock.nanoseconds()
        for item in 0..<graph.count {
            let task = op_task_create(baseline_count_one, counter.pointer, nil)
            for predecessor in graph.predecessors(of: item) { op_task_add_dependency(task, tasks[Int(predecessor)]) }
            tasks[item] = task
        }
        for task in tasks {
            op_queue_submit(queue, task)
            op_task_release(task)
        }
        try wait(queue)
        return Clock.nanoseconds() - start
    }

    func makeProbeTarget(_ layout: ProbeLayout) throws -> any ProbeTarget {
        switch layout {
        case .plain:
            let queue = try makeQueue(width: .default)
            return CoreProbeTarget(loadQueue: queue, probeQueue: queue, perTaskQoS: false)
        case .twoQueues:
            return CoreProbeTarget(loadQueue: try makeQueue(width: .default, qos: OP_QOS_BACKGROUND),
                                   probeQueue: try makeQueue(width: .default, qos: OP_QOS_USER_INTERACTIVE),
                                   perTaskQoS: false)
        case .oneQueue(let probeThreadPriority):
            let queue = try makeQueue(width: .default)
            return CoreProbeTarget(loadQueue: queue, probeQueue: queue, perTaskQoS: true,
                                   probeThreadPriority: probeThreadPriority ?? 0.5)
        case .oneQueueOfWidth(let width):
            guard let queue = op_queue_create("perf", OP_QOS_DEFAULT, Int32(width)) else {
                throw PerfError.setup("op_queue_create failed")
            }
            return CoreProbeTarget(loadQueue: queue, probeQueue: queue, perTaskQoS: true)
        case .placed(let probeCPU, let loadCPUs):
            let load = try makeQueue(width: .default, qos: OP_QOS_BACKGROUND)
            let probe = try makeQueue(width: .default, qos: OP_QOS_USER_INTERACTIVE)
            let loadList = loadCPUs.map { Int32($0) }
            var probeList = [Int32(probeCPU)]
            guard loadList.withUnsafeBufferPointer({ op_queue_set_cpu_list(load, $0.baseAddress, $0.count, nil) }) == 0,
                  op_queue_set_cpu_list(probe, &probeList, 1, nil) == 0 else {
                throw PerfError.setup("op_queue_set_cpu_list refused the W9 placement")
            }
            return CoreProbeTarget(loadQueue: load, probeQueue: probe, perTaskQoS: false)
        }
    }

    var canPlace: Bool { true }
    var canLimitWidth: Bool { true }

    func makeSuspendedQueue() throws -> any SuspendedQueue {
        let queue = try makeQueue(width: .default)
        op_queue_set_suspended(queue, true)
        return CoreSuspendedQueue(queue: queue)
    }
}

/// One level of S3's tree on the core: an item of this level counts one and submits `fan` items
/// of the next level (none at the leaves).
private struct CoreSpawnLevel {
    let queue: OpaquePointer
    let counter: UnsafeMutablePointer<Int64>
    let fan: Int
    let next: UnsafeMutablePointer<CoreSpawnLevel>?
}

/// S3's body on the core.
private func coreSpawnStep(_ context: UnsafeMutableRawPointer?) {
    let level = context!.assumingMemoryBound(to: CoreSpawnLevel.self).pointee
    baseline_count_one(level.counter)
    guard let next = level.next else { return }
    for _ in 0..<level.fan { op_queue_submit_f(level.queue, coreSpawnStep, next) }
}

/// A new core queue, or a setup error.
private func makeQueue(width: QueueWidth, qos: op_qos_t = OP_QOS_DEFAULT) throws -> OpaquePointer {
    guard let queue = op_queue_create("perf", qos, width == .serial ? 1 : OP_WIDTH_DEFAULT) else {
        throw PerfError.setup("op_queue_create failed")
    }
    return queue
}

/// Waits for the queue without a limit (the watchdog turns a hang into an error).
private func wait(_ queue: OpaquePointer) throws {
    let rc = op_queue_wait(queue, Int64(OP_WAIT_FOREVER))
    guard rc == 0 else { throw PerfError.setup("op_queue_wait returned \(rc)") }
}

/// W7 / W9 queues of the core.
private struct CoreProbeTarget: ProbeTarget {
    let loadQueue: OpaquePointer
    let probeQueue: OpaquePointer
    /// One queue: each task carries its class (and probes the highest band).
    let perTaskQoS: Bool
    /// The probes' thread priority (one queue only).
    var probeThreadPriority: Double = 0.5

    func submit(_ slot: ProbeSlot, _ kind: ProbeKind) {
        let queue = kind == .probe ? probeQueue : loadQueue
        guard perTaskQoS else {
            slot.markSubmitted()
            op_queue_submit_f(queue, ProbeSlot.body(kind), slot.pointer)
            return
        }
        var attr = op_task_attr_t()
        op_task_attr_init(&attr)
        attr.qos = Int32((kind == .probe ? OP_QOS_USER_INTERACTIVE : OP_QOS_BACKGROUND).rawValue)
        if kind == .probe {
            attr.priority = OP_PRIORITY_VERY_HIGH
            attr.thread_priority = probeThreadPriority
        }
        let task = op_task_create(ProbeSlot.body(kind), slot.pointer, &attr)
        slot.markSubmitted()
        op_queue_submit(queue, task)
        op_task_release(task)
    }

    func close() {
        _ = op_queue_wait(loadQueue, Int64(OP_WAIT_FOREVER))
        _ = op_queue_wait(probeQueue, Int64(OP_WAIT_FOREVER))
        op_queue_release(loadQueue)
        if probeQueue != loadQueue { op_queue_release(probeQueue) }
    }
}

/// A suspended default-width core queue (W8).
private struct CoreSuspendedQueue: SuspendedQueue {
    let queue: OpaquePointer

    func fill(_ n: Int) {
        for _ in 0..<n { op_queue_submit_f(queue, baseline_count_one, W8Memory.counter.pointer) }
    }

    func resumeAndDrain() {
        op_queue_set_suspended(queue, false)
        _ = op_queue_wait(queue, Int64(OP_WAIT_FOREVER))
        op_queue_release(queue)
    }
}
