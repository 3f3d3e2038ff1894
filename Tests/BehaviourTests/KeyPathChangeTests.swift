// KeyPathChangeTests.swift — the key-path spellings of the KVO announcements
// (`willChangeValue(for: \.isFinished)` / `didChangeValue(for:)`), as subclasses written for
// newer Foundation call them (issue 22, item 2). A compile test first: this file is compiled
// outside the module, against Operations and against Foundation. The queue must react to them
// as to the `forKey:` spellings: an asynchronous operation that announces its finish with a key
// path frees its slot, runs its completion block and releases its dependents; a custom isReady
// announced with `\.isReady` lets its queue start it.
import Testing

/// How an operation names the key paths it announces.
enum KeyPathSpelling: String, CaseIterable, CustomStringConvertible {
    /// `\.isFinished`: the root inferred (the common spelling).
    case inferredRoot
    /// `\KeyPathAsyncOperation.isFinished`: the subclass, which overrides the property, as root.
    case subclassRoot
    /// `\Operation.isFinished`.
    case operationRoot

    var description: String { rawValue }
}

/// An asynchronous operation with its own flags (overriding isExecuting and isFinished) that
/// announces every change with the key-path spelling it is given, and finishes when `finish()`
/// is called from elsewhere.
final class KeyPathAsyncOperation: Operation, @unchecked Sendable {
    let spelling: KeyPathSpelling
    let started = Latch()
    private let flags = Locked((executing: false, finished: false))

    init(_ spelling: KeyPathSpelling) {
        self.spelling = spelling
        super.init()
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { flags.withLock { $0.executing } }
    override var isFinished: Bool { flags.withLock { $0.finished } }

    override func start() {
        if isCancelled {
            announce(executing: false, finished: true)
            return
        }
        announce(executing: true, finished: false)
        started.open()
    }

    func finish() { announce(executing: false, finished: true) }

    private func announce(executing: Bool, finished: Bool) {
        switch spelling {
        case .inferredRoot:
            willChangeValue(for: \.isExecuting)
            willChangeValue(for: \.isFinished)
            flags.withLock { $0 = (executing, finished) }
            didChangeValue(for: \.isExecuting)
            didChangeValue(for: \.isFinished)
        case .subclassRoot:
            willChangeValue(for: \KeyPathAsyncOperation.isExecuting)
            willChangeValue(for: \KeyPathAsyncOperation.isFinished)
            flags.withLock { $0 = (executing, finished) }
            didChangeValue(for: \KeyPathAsyncOperation.isExecuting)
            didChangeValue(for: \KeyPathAsyncOperation.isFinished)
        case .operationRoot:
            willChangeValue(for: \Operation.isExecuting)
            willChangeValue(for: \Operation.isFinished)
            flags.withLock { $0 = (executing, finished) }
            didChangeValue(for: \Operation.isExecuting)
            didChangeValue(for: \Operation.isFinished)
        }
    }
}

/// Not ready until `permit()`, which announces it with `didChangeValue(for: \.isReady)`.
final class KeyPathGatedOperation: Operation, @unchecked Sendable {
    let ran = Latch()
    private let permitted = Locked(false)

    override var isReady: Bool { permitted.withLock { $0 } && super.isReady }
    override func main() { ran.open() }

    func permit() {
        willChangeValue(for: \.isReady)
        permitted.withLock { $0 = true }
        didChangeValue(for: \.isReady)
    }
}

#if !BEHAVIOUR_ON_FOUNDATION
/// Announces a property that only it declares, as Apple's NSObject allows
/// (`KeyPath<Self, Value>`); Foundation on Linux takes key paths of Operation's own properties
/// only, so there this does not compile.
final class OwnPropertyOperation: Operation, @unchecked Sendable {
    let keys = Recorder<String>()
    /// Stored: its key path prints its name (a computed one prints without it), which becomes
    /// the key. Written in main(), read after the operation finished.
    var fraction = 0

    override func willChangeValue(forKey key: String) {
        keys.append(key)
        super.willChangeValue(forKey: key)
    }

    override func main() {
        willChangeValue(for: \.fraction)
        fraction = 1
        didChangeValue(for: \.fraction)
    }
}
#endif

@Suite(.sharesProcess) struct KeyPathChangeTests {
    @Test(arguments: KeyPathSpelling.allCases)
    func O5_anAsynchronousOperationAnnouncingWithKeyPathsFinishesWhenItSaysSo(_ spelling: KeyPathSpelling) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let operation = KeyPathAsyncOperation(spelling)
        let completed = Latch()
        operation.completionBlock = { completed.open() }
        let dependentRan = Latch()
        let dependent = BlockOperation { dependentRan.open() }
        dependent.addDependency(operation)
        queue.addOperation(operation)
        queue.addOperation(dependent)
        guard waitFor(operation.started, "\(operation) to start") else { return }
        #expect(operation.isExecuting && !operation.isFinished)
        quietPeriod()
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest), \(spelling): the dependent ran before the operation finished")
        operation.finish()
        waitFor(completed, "the completion block after didChangeValue(for: isFinished), \(spelling)")
        waitFor(dependentRan, "the dependent after didChangeValue(for: isFinished), \(spelling)")
        waitUntilFinished(operation)
        waitUntilAllOperationsAreFinished(queue)
        #expect(operation.isFinished && !operation.isExecuting)
    }

    @Test func O12_aCustomIsReadyAnnouncedWithAKeyPathLetsTheQueueStartTheOperation() {
        let queue = OperationQueue()
        let operation = KeyPathGatedOperation()
        queue.addOperation(operation)
        quietPeriod()
        #expect(!operation.ran.isOpen, "\(runtimeUnderTest): the operation ran before its isReady said yes")
        operation.permit()
        waitFor(operation.ran, "the operation after didChangeValue(for: \\.isReady)")
        waitUntilAllOperationsAreFinished(queue)
    }

    #if !BEHAVIOUR_ON_FOUNDATION
    @Test func addition_aKeyPathOfTheSubclassesOwnPropertyCompilesAndReachesTheKeyedCall() {
        let operation = OwnPropertyOperation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        waitUntilFinished(operation)
        #expect(operation.keys.snapshot.contains("fraction"), "keys seen: \(operation.keys.snapshot)")
        #expect(operation.fraction == 1)
    }

    @Test func addition_keyPathsMapToTheKeysOfTheForKeySpelling() {
        let operation = KeyedOperation()
        operation.willChangeValue(for: \.isFinished)
        operation.willChangeValue(for: \.isCancelled)
        operation.willChangeValue(for: \.queuePriority)
        operation.willChangeValue(for: \.dependencies)
        operation.willChangeValue(for: \.completionBlock)
        operation.willChangeValue(for: \KeyedOperation.isExecuting)
        #expect(operation.keys.snapshot == ["isFinished", "isCancelled", "queuePriority", "dependencies",
                                          "completionBlock", "isExecuting"])
        // Observers see key-path announcements as keyed ones.
        let seen = Counter()
        let token = operation.observe(.queuePriority) { _ in seen.increment() }
        operation.didChangeValue(for: \.queuePriority)
        #expect(seen.current == 1)
        token.invalidate()
    }
    #endif
}

#if !BEHAVIOUR_ON_FOUNDATION
/// Records the keys of `willChangeValue(forKey:)`; overrides isExecuting (not final: a key path
/// with the subclass as root then still names Operation's property).
class KeyedOperation: Operation, @unchecked Sendable {
    let keys = Recorder<String>()
    override var isExecuting: Bool { super.isExecuting }
    override func willChangeValue(forKey key: String) {
        keys.append(key)
        super.willChangeValue(forKey: key)
    }
}
#endif
