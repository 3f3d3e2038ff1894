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
    /// this queue, one at a time, as on Foundation's serial queue: the next one is the ready item
    /// that queue would start next (the highest `queuePriority`, then the oldest; closures are of
    /// normal priority, so closures alone run in the order they were added, which is what
    /// URLSession's delegate callbacks need). A Foundation operation added before the operation
    /// it depends on waits, and the ready ones go first; an asynchronous one holds the order
    /// until it finishes; a barrier block runs once everything added before it ran, and nothing
    /// added after it starts before it. Inside them `OperationQueue.current` is this queue. Its
    /// waits (`waitUntilAllOperationsAreFinished()`, `addOperations(_:waitUntilFinished: true)`)
    /// wait for what was added to it.
    ///
    /// It reports `maxConcurrentOperationCount` 1. Its `operations`, `operationCount`,
    /// `cancelAllOperations()` and `isSuspended` are Foundation's own and see none of the
    /// forwarded work: use this queue's. Suspending this queue holds the forwarded work too;
    /// `cancelAllOperations()` on this queue cancels what the Foundation queue holds: closures
    /// and barrier blocks not yet run are dropped, Foundation operations are cancelled (and end
    /// finished, their completion blocks run), and what is added afterwards runs.
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

/// The Foundation queue of `OperationQueue.foundationQueue`: a serial queue in front of `target`.
/// Each added item waits here until it is the next one to run: the ready item that Foundation's
/// serial queue would start next (the highest `queuePriority`, then the oldest; closures and
/// barrier blocks are of normal priority; a barrier only once everything before it ended, and
/// nothing after it before it). Then it becomes an operation of `target` (a
/// `FoundationBridgeItem`), and the next one is chosen when it ended.
///
/// Readiness: a Foundation operation added here is ready when its `isReady` says so (Foundation
/// counts its dependencies). One that waits for an item of this queue is looked at again when
/// that item ends; one that waits for operations elsewhere gets a watcher, a Foundation operation
/// with the same dependencies on a private Foundation queue, which looks again when they finished;
/// one whose custom `isReady` says no is looked at again every 10 ms while nothing else can run.
///
/// Cancellation: `target.cancelAllOperations()` cancels what the bridge holds (`cancelForwarded`):
/// closures and barrier blocks not yet run are dropped, Foundation operations are cancelled (and
/// still started, so that they finish, as a queue does with a cancelled operation), and so is the
/// item in flight; an item whose operation of `target` was cancelled before it ran ends the same
/// way. Items added afterwards run as usual.
final class FoundationQueueBridge: Foundation.OperationQueue, @unchecked Sendable {
    let target: OperationQueue

    /// What an item runs.
    enum Work {
        case block(@Sendable () -> Void)
        case barrier(@Sendable () -> Void)
        case operation(Foundation.Operation)
    }

    /// An added item. `cancelled` and `ended` are guarded by the bridge's `condition`.
    final class Item: @unchecked Sendable {
        let number: Int
        let work: Work
        var cancelled = false
        var ended = false
        init(number: Int, work: Work) {
            self.number = number
            self.work = work
        }
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    /// Items that did not start, in the order they were added, from `pendingStart` on.
    private var pending: [Item] = []
    private var pendingStart = 0
    /// The item whose operation of `target` is added and has not ended.
    private var inFlight: Item?
    private var added = 0
    private var runningThread: pthread_t?
    /// Foundation operations that have a watcher waiting for their dependencies.
    private var watched = Set<ObjectIdentifier>()
    /// A look in 10 ms is arranged (a custom `isReady` said no).
    private var lookScheduled = false

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
        _ = forward(.block(block))
    }

    override func addOperation(_ operation: Foundation.Operation) {
        _ = forward(.operation(operation))
    }

    override func addOperations(_ operations: [Foundation.Operation], waitUntilFinished wait: Bool) {
        var last = 0
        for operation in operations { last = forward(.operation(operation)) }
        if wait { waitFor(last) }
    }

    override func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        // Everything added before it has run when it runs, and nothing after it starts before.
        _ = forward(.barrier(barrier))
    }

    override func waitUntilAllOperationsAreFinished() {
        let last = condition.withLock { added }
        waitFor(last)
    }

    /// Queues `work`; returns its number (1 for the first item ever added).
    private func forward(_ work: Work) -> Int {
        let number = condition.withLock { () -> Int in
            added += 1
            pending.append(Item(number: added, work: work))
            return added
        }
        runNext()
        return number
    }

    /// The pending items, from the first, as a snapshot.
    private func pendingSnapshotLocked() -> ArraySlice<Item> { pending[pendingStart...] }

    /// Starts the next item if none is in flight and one is ready (see the type's comment);
    /// otherwise arranges to look again when one may be.
    func runNext() {
        let snapshot = condition.withLock { () -> ArraySlice<Item>? in
            inFlight == nil && pendingStart < pending.count ? pendingSnapshotLocked() : nil
        }
        guard let snapshot else { return }
        // Readiness and priorities are read outside the lock: they may run a subclass's code.
        var chosen: Item?
        var chosenPriority = Int.min
        var waiting: [Foundation.Operation] = []
        for (offset, item) in snapshot.enumerated() {
            let priority: Int
            switch item.work {
            case .barrier:
                // Only once everything before it ended; nothing after it goes first.
                if offset == 0 { chosen = item }
                break
            case .block:
                priority = Foundation.Operation.QueuePriority.normal.rawValue
                if priority > chosenPriority {
                    chosen = item
                    chosenPriority = priority
                }
                continue
            case .operation(let operation):
                guard operation.isReady else {
                    waiting.append(operation)
                    continue
                }
                priority = operation.queuePriority.rawValue
                if priority > chosenPriority {
                    chosen = item
                    chosenPriority = priority
                }
                continue
            }
            break // at a barrier
        }
        guard let chosen else {
            arrangeLook(for: waiting)
            return
        }
        let claimed = condition.withLock { () -> Bool in
            guard inFlight == nil, !chosen.ended,
                  let index = pending[pendingStart...].firstIndex(where: { $0 === chosen }) else { return false }
            if index == pendingStart {
                pendingStart += 1
                if pendingStart > 64 && pendingStart * 2 > pending.count {
                    pending.removeFirst(pendingStart)
                    pendingStart = 0
                }
            } else {
                pending.remove(at: index)
            }
            inFlight = chosen
            return true
        }
        // Another thread started an item meanwhile: its end looks again.
        guard claimed else { return }
        target.addOperation(FoundationBridgeItem(bridge: self, item: chosen))
    }

    /// Nothing pending is ready: look again when a dependency outside this queue finishes (a
    /// watcher per operation), or in 10 ms for a custom `isReady`. A dependency on an item of
    /// this queue needs nothing: that item's end looks again.
    private func arrangeLook(for waiting: [Foundation.Operation]) {
        var poll = false
        for operation in waiting {
            let unfinished = operation.dependencies.filter { !$0.isFinished }
            if unfinished.isEmpty {
                poll = true // not ready, yet no dependency holds it: a custom isReady
                continue
            }
            let id = ObjectIdentifier(operation)
            let isNew = condition.withLock { watched.insert(id).inserted }
            guard isNew else { continue }
            let watcher = Foundation.BlockOperation { [weak self] in
                guard let self else { return }
                _ = self.condition.withLock { self.watched.remove(id) }
                self.runNext()
            }
            for dependency in unfinished { watcher.addDependency(dependency) }
            FoundationQueueBridge.watchers.addOperation(watcher)
        }
        guard poll else { return }
        let schedule = condition.withLock { () -> Bool in
            defer { lookScheduled = true }
            return !lookScheduled
        }
        guard schedule else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(10)) { [weak self] in
            guard let self else { return }
            self.condition.withLock { self.lookScheduled = false }
            self.runNext()
        }
    }

    /// Where the watchers of every bridge run: a Foundation queue, so that Foundation's own
    /// dependency tracking starts them.
    private static let watchers: Foundation.OperationQueue = {
        let queue = Foundation.OperationQueue()
        queue.name = "Operations: readiness watchers of Foundation queues of Operations queues"
        return queue
    }()

    /// Runs `item` on a worker of `target` (from its operation's main()).
    func run(_ item: Item) {
        let cancelled = condition.withLock { () -> Bool in
            runningThread = pthread_self()
            return item.cancelled
        }
        var ended = true
        switch item.work {
        case .block(let block), .barrier(let block):
            if !cancelled { block() }
        case .operation(let operation):
            if cancelled { operation.cancel() }
            if !operation.isReady && !operation.isCancelled {
                // A dependency was added since it was chosen: back to waiting, first in line.
                ended = false
            } else {
                start(operation)
            }
        }
        condition.withLock { runningThread = nil }
        if ended { end(item) } else { putBack(item) }
    }

    /// The item's operation of `target` was cancelled before it ran (the target's
    /// `cancelAllOperations()`): the item ends cancelled, a Foundation operation cancelled and
    /// started so that it finishes.
    func cancelledBeforeRunning(_ item: Item) {
        if case .operation(let operation) = item.work {
            operation.cancel()
            start(operation)
        }
        end(item)
    }

    /// Starts a Foundation operation (ready, or cancelled) and waits until it finished.
    private func start(_ operation: Foundation.Operation) {
        if !operation.isFinished && !operation.isExecuting { operation.start() }
        if !operation.isFinished { operation.waitUntilFinished() }
    }

    /// The item ended: the next one may run; waits for it may return.
    private func end(_ item: Item) {
        let first = condition.withLock { () -> Bool in
            guard !item.ended else { return false }
            item.ended = true
            if inFlight === item { inFlight = nil }
            condition.broadcast()
            return true
        }
        if first { runNext() }
    }

    /// The item goes back among the pending ones, at its place by number (they stay in the
    /// order they were added).
    private func putBack(_ item: Item) {
        condition.withLock {
            if inFlight === item { inFlight = nil }
            let index = pending[pendingStart...].firstIndex { $0.number > item.number } ?? pending.count
            pending.insert(item, at: index)
        }
        runNext()
    }

    /// `target.cancelAllOperations()`: closures and barrier blocks not yet run are dropped (they
    /// end now), Foundation operations not yet run are cancelled (they end once started), and
    /// the item in flight is cancelled.
    func cancelForwarded() {
        let (operations, dropped) = condition.withLock { () -> ([Foundation.Operation], Bool) in
            var operations: [Foundation.Operation] = []
            var kept: [Item] = []
            var dropped = false
            for item in pending[pendingStart...] {
                item.cancelled = true
                if case .operation(let operation) = item.work {
                    operations.append(operation)
                    kept.append(item)
                } else {
                    item.ended = true
                    dropped = true
                }
            }
            pending = kept
            pendingStart = 0
            if let inFlight {
                inFlight.cancelled = true
                if case .operation(let operation) = inFlight.work { operations.append(operation) }
            }
            if dropped { condition.broadcast() }
            return (operations, dropped)
        }
        for operation in operations { operation.cancel() }
        if dropped || !operations.isEmpty { runNext() }
    }

    /// Blocks until the item numbered `number` and every one before it ended.
    private func waitFor(_ number: Int) {
        condition.lock()
        defer { condition.unlock() }
        if !hasUnendedItemLocked(upTo: number) { return }
        let fromOwnItem = runningThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        // On a serial target, from one of its operations (or the main thread for the main
        // queue), the items waited for need the slot the caller holds.
        let fromSerialTarget = OperationQueue.current === target && target.maxConcurrentOperationCount == 1
        if fromOwnItem || fromSerialTarget {
            condition.unlock()
            operationMisuse("a wait on \(name ?? "the Foundation queue of \(target)") from \(fromOwnItem ? "one of its own operations" : "an operation of \(target), which is serial"); it would wait forever")
        }
        while hasUnendedItemLocked(upTo: number) { condition.wait() }
    }

    /// Whether an item numbered `number` or lower has not ended (pending or in flight).
    private func hasUnendedItemLocked(upTo number: Int) -> Bool {
        if let inFlight, inFlight.number <= number { return true }
        // The pending items are in the order they were added: the first has the lowest number.
        guard pendingStart < pending.count else { return false }
        return pending[pendingStart].number <= number
    }
}

/// The operation of the target queue that runs one item of a `FoundationQueueBridge`.
final class FoundationBridgeItem: Operation, @unchecked Sendable {
    private let bridge: FoundationQueueBridge
    private let item: FoundationQueueBridge.Item
    private let ran = Atomic<Bool>(false)

    init(bridge: FoundationQueueBridge, item: FoundationQueueBridge.Item) {
        self.bridge = bridge
        self.item = item
        super.init()
    }

    override func main() {
        // relaxed: read by start() on this same thread.
        ran.store(true, ordering: .relaxed)
        bridge.run(item)
    }

    override func start() {
        super.start()
        // Cancelled before it ran (its queue's cancelAllOperations): main() never ran.
        if !ran.load(ordering: .relaxed) { bridge.cancelledBeforeRunning(item) }
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
