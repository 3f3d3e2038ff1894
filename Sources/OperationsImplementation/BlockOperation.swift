// BlockOperation.swift — an operation that runs closures, possibly concurrently, and finishes
// when all of them returned.
import Dispatch
import OperationsCore

/// Runs one or more closures; they may run concurrently, and the operation finishes when every
/// one has returned.
open class BlockOperation: Operation, @unchecked Sendable {
    /// The first block, inline (most BlockOperations have exactly one); the rest are in the
    /// extras (`State.severalBlocks`). Written under the operation's lock before it starts;
    /// read without it once started (adding a block after start traps).
    private var firstBlock: (@Sendable () -> Void)?

    public override init() {
        super.init()
    }

    /// An operation with one closure.
    public convenience init(block: @escaping @Sendable () -> Void) {
        self.init()
        // The old value (nil unless a subclass's init() added a block) is released after the
        // store, out of line: assigning over it directly costs a retain and a release of self.
        let old = firstBlock
        firstBlock = block
        BlockOperation.drop(old)
    }

    /// Releases a block (see `init(block:)`).
    @inline(never)
    private static func drop(_ block: __owned (@Sendable () -> Void)?) {}

    /// Adds a closure. Adding one after the operation started traps.
    open func addExecutionBlock(_ block: @escaping @Sendable () -> Void) {
        if state.load(ordering: .acquiring) & (State.started | State.executing | State.finished) != 0 {
            operationMisuse("addExecutionBlock(_:) called on \(self) after it started")
        }
        let several = StripedLock.shared.withLock(for: self) { () -> Bool in
            if firstBlock == nil {
                firstBlock = block
                return false
            }
            (lockedExtrasReference ?? makeExtrasLocked())._withUnsafeGuaranteedRef { $0.moreBlocks.append(block) }
            return true
        }
        if several { state.bitwiseOr(State.severalBlocks, ordering: .releasing) }
    }

    /// The closures, in the order they were added.
    open var executionBlocks: [@Sendable () -> Void] {
        StripedLock.shared.withLock(for: self) {
            guard let firstBlock else { return [] }
            return [firstBlock] + (lockedExtras?.moreBlocks ?? [])
        }
    }

    /// The queue's fast path (Operation+PlainRun.swift): the one block, inline.
    final func runFirstBlock() { firstBlock?() }

    /// Runs the closures: one inline, several concurrently, returning when all returned.
    /// Every closure runs at the operation's QoS and thread priority, on whichever thread.
    open override func main() {
        if state.load(ordering: .acquiring) & State.severalBlocks == 0 {
            firstBlock?()
            return
        }
        let blocks = executionBlocks
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
