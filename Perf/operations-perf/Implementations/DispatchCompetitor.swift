// DispatchCompetitor.swift — `dispatch`: plain libdispatch (the C side is in DispatchBaselines):
// the global queue + a group, a serial queue, and groups for dependencies.
import DispatchBaselines

/// libdispatch through its C function-pointer API.
struct DispatchCompetitor: Competitor {
    var name: String { "dispatch" }

    func runEach(_ n: Int, width: QueueWidth, counter: Counter) throws -> UInt64 {
        switch width {
        case .default: dispatch_baseline_independent(n, counter.pointer)
        case .serial: dispatch_baseline_serial(n, counter.pointer)
        }
    }

    func runEach(_ n: Int, body: CBody, context: UnsafeMutableRawPointer) throws -> UInt64 {
        dispatch_baseline_independent_f(n, body, context)
    }

    /// One group; each producer adds its share with dispatch_group_async_f onto the default
    /// global queue.
    func runProducers(_ n: Int, producers: Int, counter: Counter) throws -> UInt64 {
        let group = Handed(dispatch_baseline_group_create())
        defer { dispatch_baseline_release(group.value) }
        return try ProducerThreads.run(producers, items: n, add: { share in
            dispatch_baseline_group_add(group.value, share, counter.pointer)
        }, wait: { dispatch_baseline_group_wait(group.value) })
    }

    func runSpawn(fan: Int, depth: Int, counter: Counter) throws -> UInt64 {
        dispatch_baseline_spawn(Int32(fan), Int32(depth), counter.pointer)
    }

    /// dispatch has no batch call: nil (W3 shows no dispatch column).
    func runBatch(_ n: Int, counter: Counter) throws -> UInt64? { nil }

    /// dispatch has no operation object: nil (W10 shows no dispatch column).
    func runByHand(_ n: Int, counter: Counter) throws -> UInt64? { nil }

    /// dispatch has no operation object: nil (W11 shows no dispatch column).
    func runHandOff(_ n: Int, counter: Counter) throws -> UInt64? { nil }

    func runGraph(_ graph: TaskGraph, counter: Counter) throws -> UInt64 {
        graph.successorStart.withUnsafeBufferPointer { start in
            graph.successors.withUnsafeBufferPointer { successors in
                graph.predecessorCount.withUnsafeBufferPointer { predecessors in
                    dispatch_baseline_graph(graph.count, start.baseAddress, successors.baseAddress,
                                            predecessors.baseAddress, counter.pointer)
                }
            }
        }
    }

    /// Plain: the default global queue. Two queues: the background and userInteractive global
    /// queues. One queue: a new concurrent queue (items cannot carry a QoS through the _f API).
    func makeProbeTarget(_ layout: ProbeLayout) throws -> any ProbeTarget {
        switch layout {
        case .plain:
            let queue = dispatch_baseline_global_queue(Int32(DISPATCH_BASELINE_QOS_DEFAULT))
            return DispatchProbeTarget(loadQueue: queue, probeQueue: queue, owned: false)
        case .twoQueues:
            return DispatchProbeTarget(
                loadQueue: dispatch_baseline_global_queue(Int32(DISPATCH_BASELINE_QOS_BACKGROUND)),
                probeQueue: dispatch_baseline_global_queue(Int32(DISPATCH_BASELINE_QOS_USER_INTERACTIVE)),
                owned: false)
        case .oneQueue:
            // No per-item thread priority either: the same queue with or without one.
            let queue = dispatch_baseline_concurrent_queue("perf.priority")
            return DispatchProbeTarget(loadQueue: queue, probeQueue: queue, owned: true)
        case .placed, .oneQueueOfWidth:
            throw DispatchCompetitor.refusal(layout)
        }
    }

    /// A dispatch queue is serial or unlimited: no explicit width.
    var canLimitWidth: Bool { false }

    /// Why libdispatch has no form for `layout` (this contender's and swift-dispatch's answer).
    static func refusal(_ layout: ProbeLayout) -> PerfError {
        if case .placed = layout { return .setup("dispatch cannot place queues on CPUs") }
        return .setup("dispatch queues have no width between 1 and unlimited")
    }

    func makeSuspendedQueue() throws -> any SuspendedQueue {
        DispatchSuspendedQueue(state: dispatch_baseline_suspended_create())
    }

    /// The background and userInteractive global queues; a group per pair (its wait, or its
    /// notify for the dependency).
    func makeInversionPairs() throws -> (any InversionPairs)? { DispatchInversionPairs() }
}

/// W12 pairs of dispatch (dispatch_baseline_inversion).
private struct DispatchInversionPairs: InversionPairs {
    func submit(depends: Bool, target: ProbeSlot, waiter: ProbeSlot) {
        dispatch_baseline_inversion(depends, target.pointer, waiter.pointer)
    }

    func close() {}
}

/// W7 / W9 dispatch queues. `close` relies on the workload having waited for every slot.
private struct DispatchProbeTarget: ProbeTarget {
    let loadQueue: dispatch_baseline_object?
    let probeQueue: dispatch_baseline_object?
    /// Whether `loadQueue` was created here (and is released by `close`).
    let owned: Bool

    func submit(_ slot: ProbeSlot, _ kind: ProbeKind) {
        slot.markSubmitted()
        dispatch_baseline_async(kind == .probe ? probeQueue : loadQueue, slot.pointer, ProbeSlot.body(kind))
    }

    func close() {
        if owned { dispatch_baseline_release(loadQueue) }
    }
}

/// A suspended concurrent dispatch queue and its group (W8).
private struct DispatchSuspendedQueue: SuspendedQueue {
    let state: OpaquePointer?

    func fill(_ n: Int) { dispatch_baseline_suspended_fill(state, n, W8Memory.counter.pointer) }
    func resumeAndDrain() { dispatch_baseline_suspended_drain(state) }
}
