// OperationQueue+Progress.swift — `OperationQueue.progress` with Apple's semantics: silent until
// its totalUnitCount is set, then one unit of completion for each operation of the queue that
// finishes by the end of its main(). The counting costs the hot path one relaxed load of a
// process-wide count of queues that report progress (zero unless one does).
import OperationsCore
import Synchronization

extension OperationQueue {
    /// How many live queues report progress: operations look for their queue only when some do.
    static let queuesReportingProgress = Atomic<Int>(0)

    /// The progress the queue made on first use of `progress`.
    var madeProgress: QueueProgress {
        StripedLock.shared.withLock(for: self) {
            if let progress = lockedProgress { return progress }
            let progress = QueueProgress(queue: self)
            lockedProgress = progress
            return progress
        }
    }

    /// From the first set of the progress's `totalUnitCount` on, operations count.
    func startReportingProgress() {
        if !reportsProgress.exchange(true, ordering: .acquiringAndReleasing) {
            OperationQueue.queuesReportingProgress.add(1, ordering: .relaxed)
        }
    }

    /// Counts one unit for `operation`, which finished its main() (or its body) on this queue,
    /// if the queue reports progress and the operation is not a barrier block.
    func countFinishedWork(of operation: Operation) {
        guard reportsProgress.load(ordering: .acquiring) else { return }
        if operation.readExtras(false, { $0.isBarrier }) { return }
        StripedLock.shared.withLock(for: self) { lockedProgress }?.addCompletedUnit()
    }

    /// What `start()` and the fast path call after an operation's main() returned, while its
    /// queue runs it: counts it toward the running queue's progress if that queue reports any.
    @inline(__always)
    static func countFinishedMainOnCurrentQueue(_ operation: Operation) {
        // relaxed: a queue that reports progress set it before its operations were submitted
        // (or the count misses operations already running, as any counter that starts late).
        if queuesReportingProgress.load(ordering: .relaxed) == 0 { return }
        guard let core = op_queue_current(), let context = op_queue_context(core) else { return }
        // The queue lives while it holds the running operation.
        Unmanaged<OperationQueue>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.countFinishedWork(of: operation) }
    }
}

/// The `Progress` of an `OperationQueue`: setting its `totalUnitCount` makes the queue report;
/// its unit counts are read and written under a lock, which the queue's workers take to count.
final class QueueProgress: Progress, @unchecked Sendable {
    /// Weak: the queue holds its progress, and a progress kept after the queue went is inert.
    private weak var queue: OperationQueue?
    private let lock = NSLock()

    init(queue: OperationQueue) {
        self.queue = queue
        super.init(parent: nil, userInfo: nil)
    }

    override var totalUnitCount: Int64 {
        get { lock.withLock { super.totalUnitCount } }
        set {
            lock.withLock { super.totalUnitCount = newValue }
            queue?.startReportingProgress()
        }
    }

    override var completedUnitCount: Int64 {
        get { lock.withLock { super.completedUnitCount } }
        set { lock.withLock { super.completedUnitCount = newValue } }
    }

    /// One operation finished by the end of its main().
    func addCompletedUnit() {
        lock.withLock { super.completedUnitCount += 1 }
    }
}
