// ClassQueues.swift — the runtime's own core queues, one per QoS class: where the Swift layer
// sends work of its own that must run at a class and never wait behind another class's work for
// a slot (completion blocks, the global executor's jobs), as Dispatch keeps a root queue per
// priority.
import OperationsCore

/// One core queue per QoS class, each of default width at that class, untracked, with no context
/// (so `OperationQueue.current` is nil in its work); made once, never freed. Only read after
/// `init`, so it may be shared.
struct ClassQueues: @unchecked Sendable {
    /// Indexed by `op_qos_t` raw value.
    private let queues: [OpaquePointer]

    /// Makes the queues, labelled "`purpose` (`class`)".
    init(_ purpose: String) {
        queues = (0..<Int(OP_QOS_COUNT)).map { raw in
            let qos = op_qos_t(UInt32(raw))
            let name = "\(purpose) (\(QualityOfService(coreClass: qos)))"
            guard let queue = op_queue_create(name, qos, OP_WIDTH_DEFAULT) else {
                fatalError("Operations: the core could not create the queue \(name) (out of memory)")
            }
            return queue
        }
    }

    /// The queue of `qos`'s class.
    func queue(for qos: op_qos_t) -> OpaquePointer {
        queues[min(Int(qos.rawValue), Int(OP_QOS_COUNT) - 1)]
    }
}
