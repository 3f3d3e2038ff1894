// Diagnostics.swift — what the runtime and a queue hold right now, in words, for a process that
// seems stuck (the core's op_runtime_describe and op_queue_describe).
import OperationsCore

extension OperationsRuntime {
    /// A multi-line report of the runtime's threads: whether the blocked-worker monitor is awake,
    /// how many queues wait behind their width, and for each pool (each QoS class, each placed
    /// CPU set) its waiting tokens, spares and blocked count, and each worker's thread id, tasks
    /// run and state (between tasks, in a task, in a wait the runtime sees, counted blocked by
    /// the monitor). A snapshot for diagnosing a hang; its format may change.
    public static func diagnosticReport() -> String {
        describeInBuffer { op_runtime_describe($0, $1) }
    }
}

extension OperationQueue {
    /// A one-line report of the queue's scheduling state: unfinished operations, claimed slots
    /// against the width, suspension, QoS, whether ready operations wait, and whether the
    /// blocked-worker monitor watches it (work waiting behind its width). A snapshot for
    /// diagnosing a queue that seems stuck; its format may change.
    public var diagnosticReport: String {
        describeInBuffer { op_queue_describe(core, $0, $1) }
    }
}

/// Calls a C describer with a buffer, once more with a bigger one if it did not fit.
func describeInBuffer(_ describer: (UnsafeMutablePointer<CChar>?, Int) -> Int) -> String {
    var capacity = 4096
    while true {
        var buffer = [CChar](repeating: 0, count: capacity)
        let needed = buffer.withUnsafeMutableBufferPointer { describer($0.baseAddress, $0.count) }
        if needed < capacity {
            return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
        capacity = needed + 1
    }
}
