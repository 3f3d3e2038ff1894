// QualityOfService.swift — Foundation's QoS classes with Apple's raw values, and their core class.
import OperationsCore

/// How important work is; higher classes get the CPU first under contention (nice values).
public enum QualityOfService: Int, Sendable {
    case userInteractive = 0x21
    case userInitiated = 0x19
    case utility = 0x11
    case background = 0x09
    case `default` = -1

    /// The core's class (`.default` is the core's default class).
    var coreClass: op_qos_t {
        switch self {
        case .userInteractive: OP_QOS_USER_INTERACTIVE
        case .userInitiated: OP_QOS_USER_INITIATED
        case .utility: OP_QOS_UTILITY
        case .background: OP_QOS_BACKGROUND
        case .default: OP_QOS_DEFAULT
        }
    }

    init(coreClass: op_qos_t) {
        switch coreClass {
        case OP_QOS_USER_INTERACTIVE: self = .userInteractive
        case OP_QOS_USER_INITIATED: self = .userInitiated
        case OP_QOS_UTILITY: self = .utility
        case OP_QOS_BACKGROUND: self = .background
        default: self = .default
        }
    }
}
