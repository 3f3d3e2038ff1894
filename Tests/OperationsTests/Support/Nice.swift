// Nice.swift — the nice value an operation's work should run at, from the core's own mapping.
import Operations
import OperationsCore

/// The core class of a `QualityOfService` (`.default` is the core's default class).
func coreClass(_ qos: QualityOfService) -> op_qos_t {
    switch qos {
    case .userInteractive: OP_QOS_USER_INTERACTIVE
    case .userInitiated: OP_QOS_USER_INITIATED
    case .utility: OP_QOS_UTILITY
    case .background: OP_QOS_BACKGROUND
    case .default: OP_QOS_DEFAULT
    }
}

/// The nice value work of class `qos` at `threadPriority` runs at: the core's mapping, limited
/// to what this process may set (as root every value of the table is allowed).
func expectedNice(_ qos: QualityOfService, threadPriority: Double = 0.5) -> Int32 {
    max(op_runtime_nice_for(coreClass(qos), threadPriority), op_runtime_lowest_nice())
}

/// The nice value of the calling thread.
func threadNice() -> Int32 { op_current_thread_nice() }
