// Introspection.swift — what the kernel says about threads (nice value, CPU affinity), the
// core's worker table and nice table, and a way to make every worker of a class run a task.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// sched_getaffinity is declared only with _GNU_SOURCE, which the Glibc module does not set.
private typealias SchedGetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> Int32
private let schedGetAffinity: SchedGetAffinity? = dlsym(nil, "sched_getaffinity").map {
    unsafeBitCast($0, to: SchedGetAffinity.self)
}

/// The CPUs in a thread's affinity mask (tid 0: the calling thread), or nil on error.
func affinityCPUs(ofThread tid: Int32) -> [Int]? {
    guard let schedGetAffinity else { return nil }
    var set = cpu_set_t()
    let rc = withUnsafeMutableBytes(of: &set) { schedGetAffinity(pid_t(tid), $0.count, $0.baseAddress) }
    guard rc == 0 else { return nil }
    return withUnsafeBytes(of: &set) { bytes in
        var cpus: [Int] = []
        for (index, byte) in bytes.enumerated() where byte != 0 {
            for bit in 0..<8 where byte & (1 << bit) != 0 { cpus.append(index * 8 + bit) }
        }
        return cpus
    }
}

/// getpriority(PRIO_PROCESS, tid): the nice value of one thread, or nil on error.
func niceOfThread(_ tid: Int32) -> Int32? {
    errno = 0
    let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
    return nice == -1 && errno != 0 ? nil : nice
}

func currentTopology() -> op_topology_t {
    var topology = op_topology_t()
    op_runtime_topology(&topology)
    return topology
}

/// The core's nice table, indexed by op_qos_t.
func niceTable() -> [Int32] {
    var table = [Int32](repeating: 0, count: Int(OP_QOS_COUNT))
    table.withUnsafeMutableBufferPointer { op_runtime_nice_table($0.baseAddress) }
    return table
}

@discardableResult
func setNiceTable(_ table: [Int32]) -> Int32 {
    table.withUnsafeBufferPointer { op_runtime_set_nice_table($0.baseAddress) }
}

let defaultNiceTable: [Int32] = [10, 2, 0, -2, -4]

/// The started workers of a class.
func workerInfos(_ qos: op_qos_t) -> [op_worker_info_t] {
    (0..<op_runtime_worker_count(qos)).compactMap { index in
        var info = op_worker_info_t()
        return op_runtime_worker_info(qos, index, &info) == 0 ? info : nil
    }
}

/// A rendezvous for `parties` task bodies: each arrives, then waits (bounded) for all others.
/// All arriving proves that `parties` bodies ran at the same time.
final class Rendezvous: Sendable {
    let parties: Int
    let latch = Latch()
    let missed = Atomic<Int>(0)
    /// The thread id of each arrival (who ran the bodies).
    let tids = Locked<[Int32]>([])
    init(parties: Int) { self.parties = parties }
}

let rendezvousBody: TaskBody = { context in
    let rendezvous = contextObject(context, as: Rendezvous.self)
    let tid = Int32(truncatingIfNeeded: currentThreadID())
    rendezvous.tids.withLock { $0.append(tid) }
    rendezvous.latch.arrive()
    if !rendezvous.latch.wait(for: rendezvous.parties) { rendezvous.missed.add(1, ordering: .relaxed) }
}

/// gettid(2) without _GNU_SOURCE: the core's op_current_thread_nice is getpriority on it, but the
/// id itself is not public, so look the libc wrapper up.
private typealias GetTid = @convention(c) () -> pid_t
private let gettidFunction: GetTid? = dlsym(nil, "gettid").map { unsafeBitCast($0, to: GetTid.self) }
func currentThreadID() -> pid_t { gettidFunction?() ?? -1 }

/// Makes every worker of `qos` run one task (and so pick up a changed nice table): as many
/// tasks as workers, on a queue as wide, each waiting until all are running. Returns the thread
/// ids that ran them, or nil (and records an issue) when that did not happen in time.
func runOneTaskOnEveryWorker(_ qos: op_qos_t, sourceLocation: SourceLocation = #_sourceLocation) throws -> Set<Int32>? {
    op_runtime_start_workers(qos)
    let workers = Int(op_runtime_worker_count(qos))
    let rendezvous = Rendezvous(parties: workers)
    let context = contextPointer(rendezvous)
    let queue = try makeQueue("every-worker", qos: qos, width: Int32(workers), sourceLocation: sourceLocation)
    defer { op_queue_release(queue) }
    let tasks = try (0..<workers).map { _ in try makeTask(rendezvousBody, context, sourceLocation: sourceLocation) }
    defer { tasks.forEach { op_task_release($0) } }
    let rc = submitBatch(queue, tasks)
    #expect(rc == 0, "submit_batch: \(errnoName(rc))", sourceLocation: sourceLocation)
    let waited = op_queue_wait(queue, Limits.waitNs)
    #expect(waited == 0, "tasks on every \(qosName(qos)) worker did not finish: \(errnoName(waited))",
            sourceLocation: sourceLocation)
    let missed = rendezvous.missed.load(ordering: .relaxed)
    #expect(missed == 0, "\(missed) of \(workers) bodies never saw all \(workers) running at once",
            sourceLocation: sourceLocation)
    guard rc == 0, waited == 0, missed == 0 else { return nil }
    return Set(rendezvous.tids.withLock { $0 })
}

/// Rounds of `runOneTaskOnEveryWorker` until every worker of `qos` has run one task, at most
/// `maxRounds`. A round's task may run on a spare instead of a worker: a body waiting at the
/// rendezvous sleeps where the core cannot see, and when another worker is slow to wake (a
/// nice-10 background worker on a loaded CPU) the monitor lends that task a spare. Returns the
/// thread ids that ran tasks over all rounds (workers and spares), or nil when a round failed.
func runTasksUntilEveryWorkerRanOne(_ qos: op_qos_t, maxRounds: Int = 20,
                                    sourceLocation: SourceLocation = #_sourceLocation) throws -> Set<Int32>? {
    op_runtime_start_workers(qos)
    let workers = Set(workerInfos(qos).map(\.tid))
    var ran: Set<Int32> = []
    for _ in 0..<maxRounds {
        guard let round = try runOneTaskOnEveryWorker(qos, sourceLocation: sourceLocation) else { return nil }
        ran.formUnion(round)
        if workers.isSubset(of: ran) { break }
    }
    return ran
}

/// op_queue_submit_batch over a Swift array.
func submitBatch(_ queue: OpaquePointer, _ tasks: [OpaquePointer]) -> Int32 {
    let optional: [OpaquePointer?] = tasks
    return optional.withUnsafeBufferPointer { op_queue_submit_batch(queue, $0.baseAddress, $0.count) }
}
