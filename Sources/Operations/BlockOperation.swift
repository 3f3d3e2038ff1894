// BlockOperation.swift — an operation that runs closures, possibly concurrently, and finishes
// when all of them returned.
import Dispatch
import OperationsCore

/// Runs one or more closures; they may run concurrently, and the operation finishes when every
/// one has returned.
open class BlockOperation: Operation, @unchecked Sendable {
    private var lockedBlocks: [@Sendable () -> Void] = []

    public override init() {
        super.init()
    }

    /// An operation with one closure.
    public convenience init(block: @escaping @Sendable () -> Void) {
        self.init()
        lockedBlocks.append(block)
    }

    /// Adds a closure. Adding one after the operation started traps.
    open func addExecutionBlock(_ block: @escaping @Sendable () -> Void) {
        if state.load(ordering: .acquiring) & (State.started | State.executing | State.finished) != 0 {
            operationMisuse("addExecutionBlock(_:) called on \(self) after it started")
        }
        StripedLock.shared.withLock(for: self) { lockedBlocks.append(block) }
    }

    /// The closures, in the order they were added.
    open var executionBlocks: [@Sendable () -> Void] {
        StripedLock.shared.withLock(for: self) { lockedBlocks }
    }

    /// Runs the closures: one inline, several concurrently, returning when all returned.
    /// Every closure runs at the operation's QoS and thread priority, on whichever thread.
    open override func main() {
        let blocks = executionBlocks
        switch blocks.count {
        case 0: return
        case 1: blocks[0]()
        default:
            let qos = effectiveCoreQoS
            let threadPriority = self.threadPriority
            DispatchQueue.concurrentPerform(iterations: blocks.count) { index in
                // A no-op (no system call) on the thread that already runs at that nice.
                let previous = op_thread_priority_apply(qos, threadPriority)
                blocks[index]()
                op_thread_priority_restore(previous)
            }
        }
    }
}
