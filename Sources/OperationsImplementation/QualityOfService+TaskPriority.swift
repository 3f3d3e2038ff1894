// QualityOfService+TaskPriority.swift — Swift concurrency's task priorities and our QoS classes,
// matched by raw value (Apple's QoS classes and Swift's priorities share their numbers).
import OperationsCore

/// The mapping, in both directions:
///
/// | TaskPriority (raw value)                 | QualityOfService   | nice (default table) |
/// |------------------------------------------|--------------------|----------------------|
/// | 33 and above (`0x21`)                    | `.userInteractive` | -4                   |
/// | 25 … 32: `.high`, `.userInitiated`       | `.userInitiated`   | -2                   |
/// | 21 … 24: `.medium`                       | `.default`         | the queue's          |
/// | 17 … 20: `.low`, `.utility`              | `.utility`         | 2                    |
/// | 1 … 16: `.background`                    | `.background`      | 10                   |
/// | 0 (unspecified)                          | `.default`         | the queue's          |
///
/// From QoS to priority: `.userInteractive` → 33, `.userInitiated` → `.high`, `.default` →
/// `.medium`, `.utility` → `.utility`, `.background` → `.background`.
///
/// A job that a queue runs (as a task executor, an actor's executor, or a `TaskOperation`'s
/// body) runs at the QoS of its task's priority, as an operation runs at its own QoS; `.medium`
/// and unspecified priorities map to `.default`, which means the queue's QoS.
extension QualityOfService {
    /// The QoS class whose raw value the priority falls on (see the table above).
    public init(_ priority: TaskPriority) {
        self = QualityOfService(taskPriorityRawValue: priority.rawValue)
    }

    init(taskPriorityRawValue raw: UInt8) {
        switch raw {
        case 0x21...: self = .userInteractive
        case 0x19...: self = .userInitiated
        case 0x15...: self = .default
        case 0x11...: self = .utility
        case 0x01...: self = .background
        default: self = .default
        }
    }

    /// The core class (or `OP_QOS_INHERIT` for `.default`: the queue's) that a job of this
    /// priority runs at.
    static func coreQoS(forJobPriority raw: UInt8) -> Int32 {
        switch raw {
        case 0x21...: Int32(OP_QOS_USER_INTERACTIVE.rawValue)
        case 0x19...: Int32(OP_QOS_USER_INITIATED.rawValue)
        case 0x15...: OP_QOS_INHERIT
        case 0x11...: Int32(OP_QOS_UTILITY.rawValue)
        case 0x01...: Int32(OP_QOS_BACKGROUND.rawValue)
        default: OP_QOS_INHERIT
        }
    }
}

extension TaskPriority {
    /// The priority of the same raw value as the QoS class (see `QualityOfService`'s table):
    /// `.default` is `.medium`.
    public init(_ qos: QualityOfService) {
        switch qos {
        case .userInteractive: self.init(rawValue: 0x21)
        case .userInitiated: self = .high
        case .default: self = .medium
        case .utility: self = .utility
        case .background: self = .background
        }
    }
}
