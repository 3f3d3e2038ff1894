// OperationQueue+Foundation.swift — Foundation APIs typed with Foundation's queue, given ours:
// a Foundation queue whose operations run on one of ours, one at a time and in the order they
// were added (for URLSession's delegateQueue, and any other API that keeps a queue); and
// NotificationCenter.addObserver(forName:object:queue:using:) with our queue.
import Dispatch
import Synchronization

extension OperationQueue {
    /// A Foundation `OperationQueue` whose operations run on this queue, one at a time, in the
    /// order they were added: for Foundation APIs that take or keep a Foundation queue, such as
    /// `URLSession(configuration:delegate:delegateQueue:)`.
    ///
    /// Closures and Foundation operations added to it (`addOperation(_:)` in both forms,
    /// `addOperations(_:waitUntilFinished:)`, `addBarrierBlock(_:)`) each become an operation of
    /// this queue, added only once the one before it finished: even on a concurrent queue they
    /// run in order, which is what URLSession's delegate callbacks need. Inside them
    /// `OperationQueue.current` is this queue. Its waits (`waitUntilAllOperationsAreFinished()`,
    /// `addOperations(_:waitUntilFinished: true)`) wait for what was added to it. A Foundation
    /// operation added to it runs once its dependencies finished; an asynchronous one holds the
    /// order until it finishes.
    ///
    /// It reports `maxConcurrentOperationCount` 1. Its `operations`, `operationCount`,
    /// `cancelAllOperations()` and `isSuspended` are Foundation's own and see none of the
    /// forwarded work: use this queue's (suspending this queue holds the forwarded work too;
    /// cancelling this queue's operations drops forwarded closures not yet run).
    ///
    /// The same object while any holder keeps it (URLSession holds its delegate queue), so
    /// what several APIs add to it keeps one order; it keeps this queue alive.
    /// ``Foundation/OperationQueue/operationsQueue`` leads back to this queue.
    public var foundationQueue: Foundation.OperationQueue {
        if let bridge = StripedLock.shared.withLock(for: self, { lockedFoundationQueue.object }) { return bridge }
        // Made outside the lock (its name reads this queue's, under the same lock); the first
        // one stored wins.
        let made = FoundationQueueBridge(target: self)
        return StripedLock.shared.withLock(for: self) {
            if let bridge = lockedFoundationQueue.object { return bridge }
            lockedFoundationQueue.object = made
            return made
        }
    }
}

extension Foundation.OperationQueue {
    /// The `Operations.OperationQueue` this Foundation queue forwards its operations to, if it
    /// is the ``Operations/OperationQueue/foundationQueue`` of one; nil for any other. For
    /// example, `session.delegateQueue.operationsQueue` is the queue passed to
    /// `URLSession(configuration:delegate:delegateQueue:)` (the `delegateQueue` getter, a
    /// Foundation API, returns Foundation's type).
    public var operationsQueue: OperationQueue? { (self as? FoundationQueueBridge)?.target }
}

/// A weak reference to a queue's bridge (the bridge holds the queue).
struct WeakFoundationQueue {
    weak var object: Foundation.OperationQueue?
}

/// The Foundation queue of `OperationQueue.foundationQueue`: each added item becomes an
/// operation of `target`, added once the previous one finished.
final class FoundationQueueBridge: Foundation.OperationQueue, @unchecked Sendable {
    let target: OperationQueue
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [@Sendable () -> Void] = []
    private var pendingStart = 0
    private var added = 0
    private var finished = 0
    private var inFlight = false
    private var runningThread: pthread_t?

    init(target: OperationQueue) {
        self.target = target
        super.init()
        super.name = "Foundation queue of \(target.description)"
    }

    override var maxConcurrentOperationCount: Int {
        get { 1 }
        set {}
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        _ = forward(block)
    }

    override func addOperation(_ operation: Foundation.Operation) {
        _ = forward(Self.running(operation))
    }

    override func addOperations(_ operations: [Foundation.Operation], waitUntilFinished wait: Bool) {
        var last = 0
        for operation in operations { last = forward(Self.running(operation)) }
        if wait { waitFor(last) }
    }

    override func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        // Everything added before it has run when it runs, and nothing after it starts before.
        _ = forward(barrier)
    }

    override func waitUntilAllOperationsAreFinished() {
        let last = condition.withLock { added }
        waitFor(last)
    }

    /// The work of a Foundation operation added to the bridge: its dependencies first, then
    /// start(), then (for an asynchronous one) its finish.
    private static func running(_ operation: Foundation.Operation) -> @Sendable () -> Void {
        return {
            for dependency in operation.dependencies { dependency.waitUntilFinished() }
            operation.start()
            if !operation.isFinished { operation.waitUntilFinished() }
        }
    }

    /// Queues `work`; returns its number (1 for the first item ever added).
    private func forward(_ work: @escaping @Sendable () -> Void) -> Int {
        let (number, submit) = condition.withLock { () -> (Int, Bool) in
            added += 1
            pending.append(work)
            let submit = !inFlight
            inFlight = true
            return (added, submit)
        }
        if submit { submitNext() }
        return number
    }

    /// Adds the oldest pending item to the target queue; the caller set `inFlight`.
    private func submitNext() {
        let work = condition.withLock { () -> @Sendable () -> Void in
            let work = pending[pendingStart]
            pendingStart += 1
            if pendingStart > 64 && pendingStart * 2 > pending.count {
                pending.removeFirst(pendingStart)
                pendingStart = 0
            }
            return work
        }
        let operation = BlockOperation { [self] in
            condition.withLock { runningThread = pthread_self() }
            work()
            condition.withLock { runningThread = nil }
        }
        // Also when the operation is cancelled (its block never runs): the order goes on.
        operation.completionBlock = { [self] in itemFinished() }
        target.addOperation(operation)
    }

    private func itemFinished() {
        let more = condition.withLock { () -> Bool in
            finished += 1
            condition.broadcast()
            if pendingStart == pending.count {
                pending.removeAll()
                pendingStart = 0
                inFlight = false
                return false
            }
            return true
        }
        if more { submitNext() }
    }

    /// Blocks until the item numbered `number` and every one before it finished.
    private func waitFor(_ number: Int) {
        condition.lock()
        defer { condition.unlock() }
        if finished >= number { return }
        let fromOwnItem = runningThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        // On a serial target, from one of its operations (or the main thread for the main
        // queue), the items waited for need the slot the caller holds.
        let fromSerialTarget = OperationQueue.current === target && target.maxConcurrentOperationCount == 1
        if fromOwnItem || fromSerialTarget {
            condition.unlock()
            operationMisuse("a wait on \(name ?? "the Foundation queue of \(target)") from \(fromOwnItem ? "one of its own operations" : "an operation of \(target), which is serial"); it would wait forever")
        }
        while finished < number { condition.wait() }
    }
}

extension NotificationCenter {
    /// Adds an observer whose `block` runs as an operation of `queue` (Foundation's
    /// `addObserver(forName:object:queue:using:)` with this package's queue).
    ///
    /// As Foundation delivers to a queue: posting adds `block` to `queue` and waits until it
    /// ran, so observers are called in the order of the posts, and a post returns after its
    /// observers ran. Posted from an operation of `queue` itself, `block` runs at once on the
    /// posting thread (as Foundation does when the queue is the current one). With `queue` nil,
    /// `block` runs on the posting thread. The observer keeps `queue` alive until it is removed
    /// (`removeObserver(_:)` with the returned token); Foundation on Linux keeps it weakly and
    /// drops the notifications of a queue that went away.
    ///
    /// Disfavoured, so a call with `queue: nil` or `queue: .main` still goes to Foundation's
    /// own method (the same delivery: on the posting thread, or on the main thread).
    @_disfavoredOverload
    public func addObserver(forName name: NSNotification.Name?, object: Any?, queue: OperationQueue?,
                            using block: @escaping @Sendable (Notification) -> Void) -> any NSObjectProtocol {
        guard let queue else {
            return addObserver(forName: name, object: object, queue: nil as Foundation.OperationQueue?, using: block)
        }
        return addObserver(forName: name, object: object, queue: nil as Foundation.OperationQueue?) { notification in
            if OperationQueue.current === queue {
                block(notification)
                return
            }
            nonisolated(unsafe) let notification = notification
            let operation = BlockOperation { block(notification) }
            queue.addOperation(operation)
            operation.waitUntilFinished()
        }
    }
}
