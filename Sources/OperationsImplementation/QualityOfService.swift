// QualityOfService.swift — Foundation's QoS classes with Apple's raw values (Foundation on Linux's
// read too), and their core class.
import OperationsCore

/// How important work is; higher classes get the CPU first under contention (nice values).
///
/// The raw values are Apple's (33, 25, 17, 9, and -1 for `.default`); Foundation on Linux uses
/// 0 to 4 instead. ``init(rawValue:)`` accepts both sets, so a raw value persisted by either
/// reads back as the same class; `rawValue` always gives Apple's.
public enum QualityOfService: Int, Sendable {
    case userInteractive = 0x21
    case userInitiated = 0x19
    case utility = 0x11
    case background = 0x09
    case `default` = -1

    /// The class with raw value `rawValue`: Apple's value (33, 25, 17, 9, -1) or Foundation on
    /// Linux's (0 `.userInteractive`, 1 `.userInitiated`, 2 `.utility`, 3 `.background`,
    /// 4 `.default`); the two sets do not overlap. Any other value gives nil.
    public init?(rawValue: Int) {
        switch rawValue {
        case 0x21, 0: self = .userInteractive
        case 0x19, 1: self = .userInitiated
        case 0x11, 2: self = .utility
        case 0x09, 3: self = .background
        case -1, 4: self = .default
        default: return nil
        }
    }

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
