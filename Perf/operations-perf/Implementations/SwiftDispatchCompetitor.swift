// SwiftDispatchCompetitor.swift — `swift-dispatch`: Swift's `DispatchQueue`, what a Swift program
// on Linux writes without operation queues: closures on the global queue or a serial queue, a
// `DispatchGroup` to wait, and for a graph a group per item that its predecessors leave (as the
// C `dispatch` contender does through the function-pointer API, with a closure per item here).
// No operation object (W3, W10, W11 show none), no explicit width and no placement.
import DispatchBaselines
import Dispatch

/// libdispatch through Swift's `DispatchQueue` and `DispatchGroup`, closures and all.
struct SwiftDispatchCompetitor: Competitor {
    var name: String { "swift-dispatch" }

    private static var global: DispatchQueue { DispatchQueue.global(qos: .default) }

    func runEach(_ n: Int, width: QueueWidth, counter: Counter) throws -> UInt64 {
        let queue = width == .serial ? DispatchQueue(label: "perf.swift-dispatch.serial") : Self.global
        let group = DispatchGroup()
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.async(group: group) { counter.countOne() } }
        group.wait()
        return Clock.nanoseconds() - start
    }

    func runEach(_ n: Int, body: CBody, context: UnsafeMutableRawPointer) throws -> UInt64 {
        let queue = Self.global
        let group = DispatchGroup()
        let handed = Handed(context)
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.async(group: group) { body(handed.value) } }
        group.wait()
        return Clock.nanoseconds() - start
    }

    func runProducers(_ n: Int, producers: Int, counter: Counter) throws -> UInt64 {
        let group = DispatchGroup()
        let queue = Self.global
        return try ProducerThreads.run(producers, items: n, add: { share in
            for _ in 0..<share { queue.async(group: group) { counter.countOne() } }
        }, wait: { group.wait() })
    }

    func runSpawn(fan: Int, depth: Int, counter: Counter) throws -> UInt64 {
        let group = DispatchGroup()
        let queue = Self.global
        @Sendable func step(_ level: Int) {
            counter.countOne()
            guard level < depth else { return }
            for _ in 0..<fan { queue.async(group: group) { step(level + 1) } }
        }
        let start = Clock.nanoseconds()
        queue.async(group: group) { step(0) }
        group.wait()
        return Clock.nanoseconds() - start
    }

    func runBatch(_ n: Int, counter: Counter) throws -> UInt64? { nil }
    func runByHand(_ n: Int, counter: Counter) throws -> UInt64? { nil }
    func runHandOff(_ n: Int, counter: Counter) throws -> UInt64? { nil }

    /// A group per item with predecessors, entered once per predecessor; its notify runs the
    /// item, which leaves each successor's group. Items without predecessors are submitted
    /// after every group is set up.
    func runGraph(_ graph: TaskGraph, counter: Counter) throws -> UInt64 {
        let queue = Self.global
        let start = Clock.nanoseconds()
        let allDone = DispatchGroup()
        let groups: [DispatchGroup?] = (0..<graph.count).map { item in
            graph.predecessorCount[item] > 0 ? DispatchGroup() : nil
        }
        let successorStart = graph.successorStart
        let successors = graph.successors
        let run: @Sendable (Int) -> Void = { item in
            counter.countOne()
            for index in Int(successorStart[item])..<Int(successorStart[item + 1]) {
                groups[Int(successors[index])]!.leave()
            }
            allDone.leave()
        }
        for item in 0..<graph.count {
            allDone.enter()
            guard let group = groups[item] else { continue }
            for _ in 0..<graph.predecessorCount[item] { group.enter() }
            group.notify(queue: queue) { run(item) }
        }
        for item in 0..<graph.count where groups[item] == nil {
            queue.async { run(item) }
        }
        allDone.wait()
        let elapsed = Clock.nanoseconds() - start
        // The groups are freed here, after the clock (as the C contender frees its own), not
        // by the last closure on a worker while the next sample runs.
        withExtendedLifetime((groups, run)) {}
        return elapsed
    }

    /// Plain: the default global queue. Two queues: the background and userInteractive global
    /// queues. One queue: a new concurrent queue, each closure submitted with its item's QoS.
    func makeProbeTarget(_ layout: ProbeLayout) throws -> any ProbeTarget {
        switch layout {
        case .plain:
            return SwiftDispatchProbeTarget(loadQueue: Self.global, probeQueue: Self.global, perItemQoS: false)
        case .twoQueues:
            return SwiftDispatchProbeTarget(loadQueue: DispatchQueue.global(qos: .background),
                                            probeQueue: DispatchQueue.global(qos: .userInteractive),
                                            perItemQoS: false)
        case .oneQueue:
            let queue = DispatchQueue(label: "perf.swift-dispatch.priority", attributes: .concurrent)
            return SwiftDispatchProbeTarget(loadQueue: queue, probeQueue: queue, perItemQoS: true)
        case .placed, .oneQueueOfWidth:
            throw DispatchCompetitor.refusal(layout)
        }
    }

    /// A dispatch queue is serial or unlimited: no explicit width.
    var canLimitWidth: Bool { false }

    func makeSuspendedQueue() throws -> any SuspendedQueue {
        SwiftDispatchSuspendedQueue()
    }

    /// The background and userInteractive global queues; a group per pair (its wait, or its
    /// notify for the dependency), as the C contender's.
    func makeInversionPairs() throws -> (any InversionPairs)? { SwiftDispatchInversionPairs() }
}

/// W12 pairs of `swift-dispatch` (the closure form of dispatch_baseline_inversion).
private struct SwiftDispatchInversionPairs: InversionPairs {
    func submit(depends: Bool, target: ProbeSlot, waiter: ProbeSlot) {
        let group = DispatchGroup()
        waiter.markSubmitted()
        DispatchQueue.global(qos: .background).async(group: group) {
            perf_inversion_target_body(UnsafeMutableRawPointer(target.pointer))
        }
        let interactive = DispatchQueue.global(qos: .userInteractive)
        if depends {
            // dispatch's form of a dependency: the notify closure runs once the group is empty.
            group.notify(queue: interactive) { perf_probe_body(UnsafeMutableRawPointer(waiter.pointer)) }
        } else {
            interactive.async {
                group.wait()
                perf_probe_body(UnsafeMutableRawPointer(waiter.pointer))
            }
        }
    }

    func close() {}
}

/// W7 / W9 queues of `swift-dispatch`.
private struct SwiftDispatchProbeTarget: ProbeTarget {
    let loadQueue: DispatchQueue
    let probeQueue: DispatchQueue
    /// One queue: each closure carries its item's QoS (userInteractive probes, background load).
    let perItemQoS: Bool

    func submit(_ slot: ProbeSlot, _ kind: ProbeKind) {
        slot.markSubmitted()
        if perItemQoS {
            let qos: DispatchQoS = kind == .probe ? .userInteractive : .background
            loadQueue.async(qos: qos, flags: .enforceQoS) { slot.run(kind) }
        } else {
            (kind == .probe ? probeQueue : loadQueue).async { slot.run(kind) }
        }
    }

    func close() {}
}

/// A suspended concurrent queue and a group (W8): closures that capture nothing (the counter
/// is a static).
private final class SwiftDispatchSuspendedQueue: SuspendedQueue {
    let queue = DispatchQueue(label: "perf.swift-dispatch.suspended", attributes: [.concurrent, .initiallyInactive])
    let group = DispatchGroup()

    func fill(_ n: Int) {
        for _ in 0..<n { queue.async(group: group) { W8Memory.counter.countOne() } }
    }

    func resumeAndDrain() {
        queue.activate()
        group.wait()
    }
}
