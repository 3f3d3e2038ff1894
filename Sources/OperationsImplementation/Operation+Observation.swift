// Operation+Observation.swift — observing an operation without KVO, and the KVO compatibility
// path: willChangeValue / didChangeValue(forKey:) as custom asynchronous subclasses call them,
// and their key-path spellings (willChangeValue(for: \.isFinished)).
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
            recheckReadiness()
        default:
            break
        }
    }

    /// Re-reads `isReady` through the getter (a subclass's override runs, also for an operation
    /// in no queue), then lets a queue that holds the operation back for it go on (O12).
    func recheckReadiness() {
        let ready = isCancelled || isReady
        if ready && state.load(ordering: .acquiring) & State.readinessHeld != 0 { releaseReadinessHold() }
    }
}

// MARK: - Key-path spellings

extension Operation {
    /// Announces that the value at `keyPath` is about to change: `willChangeValue(forKey:)` with
    /// the key path's key, e.g. `willChangeValue(for: \.isFinished)` calls
    /// `willChangeValue(forKey: "isFinished")`.
    ///
    /// The key-path spelling that subclasses written for Foundation use. Every key path of
    /// Operation's own properties maps to the property's name (`\.isFinished`, `\.isExecuting`,
    /// `\.isCancelled`, `\.isReady`, `\.dependencies`, `\.queuePriority`, `\.completionBlock`,
    /// and the others), also written with the subclass as root (`\MyOperation.isFinished`) and
    /// also where the subclass overrides the property. A key path of a property the subclass
    /// declares itself (`\.progressValue`) is accepted too, as on Apple's platforms (Foundation on
    /// Linux takes only Operation's own): see `_OperationKeyPathChanges`.
    public func willChangeValue<Value>(for keyPath: KeyPath<Operation, Value>) {
        willChangeValue(forKey: Operation.key(of: keyPath, root: Operation.self))
    }

    /// Announces that the value at `keyPath` changed: `didChangeValue(forKey:)` with the key
    /// path's key (see `willChangeValue(for:)`), so `didChangeValue(for: \.isFinished)` finishes
    /// the operation once `isFinished` reads true, as `didChangeValue(forKey: "isFinished")` does.
    public func didChangeValue<Value>(for keyPath: KeyPath<Operation, Value>) {
        didChangeValue(forKey: Operation.key(of: keyPath, root: Operation.self))
    }

    /// The name of the property of Operation that `keyPath` (rooted at `Root`) reads, or nil for
    /// a key path that reads anything else (a property of a subclass, a property of a property).
    static func observedKey<Root: Operation>(of keyPath: AnyKeyPath, root: Root.Type) -> String? {
        switch keyPath {
        case \Root.isFinished: "isFinished"
        case \Root.isExecuting: "isExecuting"
        case \Root.isCancelled: "isCancelled"
        case \Root.isReady: "isReady"
        case \Root.dependencies: "dependencies"
        case \Root.queuePriority: "queuePriority"
        case \Root.completionBlock: "completionBlock"
        case \Root.isAsynchronous: "isAsynchronous"
        case \Root.isConcurrent: "isConcurrent"
        case \Root.name: "name"
        case \Root.qualityOfService: "qualityOfService"
        case \Root.threadPriority: "threadPriority"
        default: nil
        }
    }

    /// The key that `willChangeValue(forKey:)` and `didChangeValue(forKey:)` get for `keyPath`:
    /// its property's name, or for a key path that reads no property of Operation its text
    /// without the root (`\MyOperation.progressValue` → "progressValue"; a computed property of a
    /// subclass prints without its name).
    static func key<Root: Operation>(of keyPath: AnyKeyPath, root: Root.Type) -> String {
        if let key = observedKey(of: keyPath, root: root) { return key }
        let text = String(describing: keyPath)
        for prefix in ["\\\(String(reflecting: Root.self)).", "\\\(String(describing: Root.self))."] where text.hasPrefix(prefix) {
            return String(text.dropFirst(prefix.count))
        }
        return text
    }
}

/// What gives every `Operation` subclass `willChangeValue(for:)` and `didChangeValue(for:)`
/// with a key path rooted at the subclass itself (`KeyPath<Self, Value>`, as Foundation's
/// NSObject declares them on Apple's platforms), so a key path of a property that only the
/// subclass declares compiles: `willChangeValue(for: \.progressValue)`. Operation conforms;
/// nothing else needs to.
///
/// Key paths of Operation's own properties go to `Operation.willChangeValue(for:)`, which maps
/// them to their keys. One that arrives here (a subclass's own property, or one of Operation's
/// written as `\MyOperation.isFinished` in a final class that overrides it, which Swift resolves
/// here) reaches `willChangeValue(forKey:)` / `didChangeValue(forKey:)` with its key, or with
/// its text where the key cannot be known; after such a change the operation re-reads
/// `isFinished` and `isReady` (finishing, or letting its queue start it), so an announcement of
/// any spelling drives the queue.
public protocol _OperationKeyPathChanges: AnyObject {}

extension Operation: _OperationKeyPathChanges {}

extension _OperationKeyPathChanges where Self: Operation {
    /// `willChangeValue(forKey:)` with the key of `keyPath` (see `_OperationKeyPathChanges`).
    public func willChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        willChangeValue(forKey: Operation.key(of: keyPath, root: Self.self))
    }

    /// `didChangeValue(forKey:)` with the key of `keyPath`; for a key path whose key cannot be
    /// known, then re-reads `isFinished` and `isReady` (see `_OperationKeyPathChanges`).
    public func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        let known = Operation.observedKey(of: keyPath, root: Self.self)
        didChangeValue(forKey: known ?? Operation.key(of: keyPath, root: Self.self))
        if known == nil {
            completeIfFinished()
            recheckReadiness()
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
