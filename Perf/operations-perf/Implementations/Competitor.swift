// Competitor.swift — the one interface every competitor implements (Taskflow style): workloads
// talk only to this, so adding a competitor is one new file and one line in `Competitors.all`.
import DispatchBaselines

/// A runtime under test. Each method runs one workload shape and returns wall-clock ns for the
/// whole of it (building, submitting, running, waiting); items count into `counter`.
protocol Competitor: Sendable {
    /// The name in tables, JSON and `--contenders`.
    var name: String { get }
    /// W1, W2: `n` items added one by one to a queue of `width`, then a wait for all.
    func runEach(_ n: Int, width: QueueWidth, counter: Counter) throws -> UInt64
    /// W3: `n` items in one batch call that waits until they finished; nil when the competitor
    /// has no batch call of its own.
    func runBatch(_ n: Int, counter: Counter) throws -> UInt64?
    /// W10: `n` items, each created, run by hand on the calling thread and released; nil when
    /// the competitor has no operation object.
    func runByHand(_ n: Int, counter: Counter) throws -> UInt64?
    /// W11: `n` operation objects, each made on the calling thread and released, never run, on
    /// one other thread (`HandOffRing`); nil when the competitor has no operation object.
    func runHandOff(_ n: Int, counter: Counter) throws -> UInt64?
    /// S1: `n` items running the C body `body(context)`, added one by one from the calling thread
    /// to a default-width queue, then a wait for all.
    func runEach(_ n: Int, body: CBody, context: UnsafeMutableRawPointer) throws -> UInt64
    /// S2: `n` counting items added to one shared default-width queue by `producers` threads at
    /// once (the calling thread is one of them, `ProducerThreads`), then a wait for all.
    func runProducers(_ n: Int, producers: Int, counter: Counter) throws -> UInt64
    /// S3: a tree of counting items on one default-width queue, each item above the leaves
    /// adding `fan` children to its own queue from its body, `depth` levels below the root;
    /// then a wait for the whole tree.
    func runSpawn(fan: Int, depth: Int, counter: Counter) throws -> UInt64
    /// W4–W6: every item of `graph` after its predecessors, then a wait for all.
    func runGraph(_ graph: TaskGraph, counter: Counter) throws -> UInt64
    /// W7, W9: queues laid out as `layout`, for submitting probe and load bodies one by one.
    func makeProbeTarget(_ layout: ProbeLayout) throws -> any ProbeTarget
    /// Whether the competitor's queues take an explicit width (ProbeLayout.oneQueueOfWidth).
    var canLimitWidth: Bool { get }
    /// W8: a suspended queue of default width to fill and then drain.
    func makeSuspendedQueue() throws -> any SuspendedQueue
    /// W12: queues for a background item and a userInteractive item that waits for it or
    /// depends on it; nil when the competitor does not take part.
    func makeInversionPairs() throws -> (any InversionPairs)?
    /// Whether queues can be placed on chosen CPUs (W9 placed, nice-share --same-cpu).
    var canPlace: Bool { get }
}

extension Competitor {
    var canPlace: Bool { false }
    func makeInversionPairs() throws -> (any InversionPairs)? { nil }
}

/// A C body: what every competitor runs for S1 (and what the core and dispatch take directly).
typealias CBody = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// A value handed to other threads whose type does not say it may be (a queue of a generic API,
/// a raw context pointer); the workload guarantees its safe use.
struct Handed<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// All competitors, in table order.
enum Competitors {
    static let all: [any Competitor] = [
        OperationQueueCompetitor<OperationsAPI>(),
        CoreCompetitor(),
        OperationQueueCompetitor<FoundationAPI>(),
        DispatchCompetitor(),
        SwiftDispatchCompetitor(),
    ]
}

/// How many items of a queue may run at once.
enum QueueWidth: Sendable {
    /// The runtime's choice (one per CPU for ours).
    case `default`
    /// One at a time, in order.
    case serial
}

/// How W7 and W9 lay out their queues.
enum ProbeLayout: Sendable {
    /// One default-width queue at the default QoS; probes only (W7).
    case plain
    /// Load on a background queue, probes on a userInteractive queue (W9 a, and c without load).
    case twoQueues
    /// Load and probes on one default-width queue; the ops carry their own QoS and priority
    /// where the runtime has per-op QoS (W9 b); with `probeThreadPriority`, the probes also
    /// carry that thread priority (W9 "one queue, thread priority": a thread priority and a QoS
    /// are one request).
    case oneQueue(probeThreadPriority: Double?)
    /// As oneQueue (no thread priority), the queue of explicit width `width` (W9 "one queue,
    /// width CPUs": every slot is taken by the load, so a probe waits for the first slot that
    /// frees; competitors with `canLimitWidth` only).
    case oneQueueOfWidth(Int)
    /// As twoQueues, with the probe queue placed on `probeCPU` and the load queue on the other
    /// CPUs (W9 d; competitors with `canPlace` only).
    case placed(probeCPU: Int, loadCPUs: [Int])
}

/// What a probe-target item runs.
enum ProbeKind: Sendable {
    /// `perf_probe_body`: stamps its start, first thing.
    case probe
    /// `perf_load_body`: stamps its start, then burns 1 ms of CPU.
    case load
}

/// Queues that take probe and load items one by one (W7, W9).
protocol ProbeTarget {
    /// Submits `slot`'s body; calls `probe_mark_submitted(slot)` right before the submit call.
    func submit(_ slot: ProbeSlot, _ kind: ProbeKind)
    /// Drops the queues; every submitted item has finished by then.
    func close()
}

/// W12: a background item and a userInteractive item after it, submitted pair by pair.
protocol InversionPairs {
    /// Marks `waiter` submitted, then submits a background item running
    /// `perf_inversion_target_body(target)` and a userInteractive item that waits for it
    /// (`depends` false: a blocking wait in its body) or depends on it (`depends` true: the
    /// runtime's dependency), then runs `perf_probe_body(waiter)`.
    func submit(depends: Bool, target: ProbeSlot, waiter: ProbeSlot)
    /// Drops the queues; every submitted pair has finished by then.
    func close()
}

/// A suspended queue of default width (W8).
protocol SuspendedQueue {
    /// Adds `n` items counting into `W8Memory.counter`; none may start. Closure-based runtimes
    /// queue a closure that captures nothing, so the figure is the runtime's own memory.
    func fill(_ n: Int)
    /// Resumes the queue and waits until every item ran; then drops the queue.
    func resumeAndDrain()
}

/// A shared tally the items increment (`baseline_count_one`); the harness owns its lifetime.
struct Counter: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int64>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: 0)
    }

    /// The counting body, for closure-based runtimes: the same C call the others run.
    @inline(__always)
    func countOne() { baseline_count_one(pointer) }

    /// What the items have counted so far.
    var value: Int64 { pointer.pointee }

    func free() { pointer.deallocate() }
}

/// One `probe_slot`, sendable into closures (the workload owns the storage until all finished).
struct ProbeSlot: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<probe_slot>

    /// The C body for `kind`.
    static func body(_ kind: ProbeKind) -> @convention(c) (UnsafeMutableRawPointer?) -> Void {
        switch kind {
        case .probe: perf_probe_body
        case .load: perf_load_body
        }
    }

    /// Runs the body for `kind` on the calling thread (for closure-based runtimes).
    func run(_ kind: ProbeKind) { ProbeSlot.body(kind)(UnsafeMutableRawPointer(pointer)) }

    func markSubmitted() { probe_mark_submitted(pointer) }
}
