// Operation+Observation.swift — observing an operation without KVO, and the KVO compatibility
// path: willChangeValue / didChangeValue(forKey:) as custom asynchronous subclasses call them.
import OperationsCore
import Synchronization

extension Operation {
    /// The keys Apple documents as KVO-compliant on Operation.
    public enum ObservationKey: String, Sendable, CaseIterable {
        case isCancelled, isExecuting, isFinished, isReady, dependencies, queuePriority, completionBlock
    }

    /// Calls `handler` (on the thread that made the change) each time `key` changes, until the
    /// returned token is invalidated or released.
    public func observe(_ key: ObservationKey, _ handler: @escaping @Sendable (Operation) -> Void) -> OperationObservation {
        let id = OperationObservation.nextID.add(1, ordering: .relaxed).newValue
        withExtras { $0.observers[key, default: [:]][id] = handler }
        let old = state.bitwiseOr(State.hasObservers, ordering: .acquiringAndReleasing).oldValue
        if old & State.hasObservers == 0 && isPlainBlockOperation {
            registerWithUnfinishedDependencies() // see needsReadinessAnnouncements
        }
        return OperationObservation(operation: self, key: key, id: id)
    }

    func removeObserver(_ key: ObservationKey, id: Int) {
        StripedLock.shared.withLock(for: self) { _ = lockedExtras?.observers[key]?.removeValue(forKey: id) }
    }

    /// What `didChangeValue(forKey:)` does: observers, then the queue's reaction.
    func announceChange(forKey key: String) {
        let current = state.load(ordering: .acquiring)
        // Without observers only "isFinished" and "isReady" matter: a length check spares the
        // string comparisons for the other keys (start() posts "isExecuting" twice).
        if current & State.hasObservers == 0 {
            let length = key.utf8.count
            if length != 10 && length != 7 { return }
        }
        if current & State.hasObservers != 0, let known = ObservationKey(rawValue: key) {
            let handlers = readExtras([]) { $0.observers[known].map { Array($0.values) } ?? [] }
            for handler in handlers { handler(self) }
        }
        switch key {
        case "isFinished":
            completeIfFinished()
        case "isReady":
            // Re-read through the getter (a subclass's override runs, also for an operation in
            // no queue), then let a queue that holds the operation back for it go on (O12).
            let ready = isCancelled || isReady
            if ready && state.load(ordering: .acquiring) & State.readinessHeld != 0 { releaseReadinessHold() }
        default:
            break
        }
    }
}

/// A registration made with `Operation.observe(_:_:)`; invalidated on `invalidate()` or release.
public final class OperationObservation: Sendable {
    static let nextID = Atomic<Int>(0)

    private let operation: Operation
    private let key: Operation.ObservationKey
    private let id: Int

    init(operation: Operation, key: Operation.ObservationKey, id: Int) {
        self.operation = operation
        self.key = key
        self.id = id
    }

    /// Stops the calls.
    public func invalidate() { operation.removeObserver(key, id: id) }

    deinit { invalidate() }
}
