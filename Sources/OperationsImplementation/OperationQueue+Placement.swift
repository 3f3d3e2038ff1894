// OperationQueue+Placement.swift — queues placed on chosen CPUs or a NUMA node: the queue's
// operations (and its jobs, and its TaskOperations' bodies) run only on workers pinned to those
// CPUs. The core does the work (placement.c); this checks the input and names what it refuses.
import Glibc
import OperationsCore

extension OperationQueue {
    /// Why a placement was refused; the queue's placement stays as it was.
    public struct PlacementError: Error, Equatable, CustomStringConvertible {
        public enum Reason: Equatable, Sendable {
            /// The process may not run on this CPU (it is outside its affinity mask).
            case cpuNotUsable(Int)
            /// An empty set (use `nil` to lift a placement).
            case emptyCPUSet
            /// No usable CPU lies on this NUMA node (it does not exist, or NUMA is unavailable
            /// and the node is not 0).
            case noSuchNUMANode(Int)
        }

        /// What was wrong.
        public let reason: Reason
        /// The queue's description (type and name).
        public let queue: String

        public var description: String {
            let usable = OperationsRuntime.usableCPUs.map(String.init).joined(separator: ", ")
            switch reason {
            case .cpuNotUsable(let cpu):
                return "\(queue): CPU \(cpu) is outside the process's affinity mask (usable CPUs: \(usable))"
            case .emptyCPUSet:
                return "\(queue): an empty CPU set; use nil to lift the placement"
            case .noSuchNUMANode(let node):
                return "\(queue): NUMA node \(node) has no usable CPU (usable CPUs: \(usable); NUMA \(OperationsRuntime.topology.usesNUMA ? "in use" : "not in use"))"
            }
        }
    }

    /// Places the queue: from now on its operations start only on workers pinned to these CPUs
    /// (workers for that set and the queue's QoS class are made on first use, pinned as the
    /// default ones, one per CPU). `nil` lifts the placement. Running operations finish where
    /// they are. Placement composes with QoS and nice values, `threadPriority`, width,
    /// priorities, suspension, nested waits (spares keep to the set) and dependencies on any
    /// queue; jobs of tasks that prefer the queue and `TaskOperation` bodies follow it too.
    ///
    /// Throws ``PlacementError`` for an empty set or a CPU the process may not run on (the
    /// error names it); the placement then stays as it was. `OperationQueue.main` cannot be
    /// placed (its operations run on the main thread): that traps.
    public func setCPUs(_ cpus: Set<Int>?) throws {
        if isMainQueue { operationMisuse("setCPUs(_:) called on \(self); its operations run on the main thread") }
        guard let cpus else { return place(nil) }
        if cpus.isEmpty { throw PlacementError(reason: .emptyCPUSet, queue: description) }
        let usable = Set(OperationsRuntime.usableCPUs)
        if let bad = cpus.sorted().first(where: { !usable.contains($0) }) {
            throw PlacementError(reason: .cpuNotUsable(bad), queue: description)
        }
        place(cpus.sorted())
    }

    /// Places the queue on the usable CPUs of a NUMA node (libnuma's numbering; without NUMA
    /// every CPU is node 0). Throws ``PlacementError`` for a node with no usable CPU; the
    /// placement then stays as it was.
    public func setNUMANode(_ node: Int) throws {
        if isMainQueue { operationMisuse("setNUMANode(_:) called on \(self); its operations run on the main thread") }
        let name = description // takes the queue's lock: before ours
        let rc = StripedLock.shared.withLock(for: self) { () -> Int32 in
            guard let node32 = Int32(exactly: node) else { return EINVAL }
            let rc = op_queue_set_numa_node(core, node32)
            if rc == 0 { copyPlacementToBodyQueueLocked() }
            return rc
        }
        if rc == EINVAL { throw PlacementError(reason: .noSuchNUMANode(node), queue: name) }
        if rc != 0 { fatalError("Operations: setNUMANode(\(node)) on \(name) failed (core error \(rc))") }
    }

    /// The CPUs the queue is placed on; nil when it is not placed.
    public var cpus: Set<Int>? {
        let list = OperationQueue.placement(of: core)
        return list.isEmpty ? nil : Set(list)
    }

    /// Applies a checked placement (nil: none) to the queue and its TaskOperation bodies' queue.
    private func place(_ cpus: [Int]?) {
        let list = (cpus ?? []).map { Int32($0) }
        StripedLock.shared.withLock(for: self) {
            let rc = list.withUnsafeBufferPointer { op_queue_set_cpu_list(core, $0.baseAddress, $0.count, nil) }
            if rc != 0 { fatalError("Operations: placing a queue failed (core error \(rc))") }
            copyPlacementToBodyQueueLocked()
        }
    }

    /// Gives the body executor's core queue (if made) the queue's placement. Caller holds the
    /// queue's lock (the body executor makes its queue under it, copying the placement too).
    func copyPlacementToBodyQueueLocked() {
        guard let jobCore = bodyExecutor.jobCore else { return }
        OperationQueue.copyPlacement(from: core, to: jobCore)
    }

    /// Gives `target` the placement of `source`.
    static func copyPlacement(from source: OpaquePointer, to target: OpaquePointer) {
        let list = placement(of: source).map { Int32($0) }
        _ = list.withUnsafeBufferPointer { op_queue_set_cpu_list(target, $0.baseAddress, $0.count, nil) }
    }

    /// The CPU ids a core queue is placed on (empty: not placed).
    static func placement(of coreQueue: OpaquePointer) -> [Int] {
        var buffer = [Int32](repeating: 0, count: 64)
        var count = op_queue_cpu_list(coreQueue, &buffer, buffer.count)
        if count > buffer.count {
            buffer = [Int32](repeating: 0, count: count)
            count = op_queue_cpu_list(coreQueue, &buffer, buffer.count)
        }
        return buffer.prefix(count).map(Int.init)
    }
}

extension OperationsRuntime {
    /// The CPU ids the process may run on (its affinity mask at start-up), ascending: what a
    /// queue may be placed on.
    public static var usableCPUs: [Int] {
        (0..<topology.cpuCount).compactMap { index in
            var cpu: Int32 = 0, node: Int32 = 0
            return op_runtime_cpu(Int32(index), &cpu, &node) == 0 ? Int(cpu) : nil
        }.sorted()
    }
}
