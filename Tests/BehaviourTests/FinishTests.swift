// FinishTests.swift — an operation is finished when its `isFinished` reads true (SEMANTICS O5,
// O7): a subclass that overrides isExecuting / isFinished, announcing them with will/didChange,
// stays unfinished after its start() called super.start() and returned, until its own flag
// says finished — completion block, dependents, queue slot and operationCount wait for that.
// The two patterns are written from the descriptions of issue 13, item 3.
import Testing

/// Keeps its own executing / finished flags, calls super.start() (which runs main(), where it
/// starts executing by its own flag), and finishes later, when `finish()` is called from
/// elsewhere. With `combinesWithSuper`, its
/// isFinished is its own flag and super's.
final class OwnFlagsOperation: Operation, @unchecked Sendable {
    let combinesWithSuper: Bool
    let mainRan = Latch()
    private let flags = Locked((executing: false, finished: false))

    init(combinesWithSuper: Bool) {
        self.combinesWithSuper = combinesWithSuper
        super.init()
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { flags.withLock { $0.executing } }
    override var isFinished: Bool {
        let own = flags.withLock { $0.finished }
        return combinesWithSuper ? own && super.isFinished : own
    }

    /// Foundation's start(): runs main() on this thread, then marks super finished.
    override func start() { super.start() }

    /// Begins the work: executing by the subclass's own flag, until `finish()`.
    override func main() {
        willChangeValue(forKey: "isExecuting")
        flags.withLock { $0.executing = true }
        didChangeValue(forKey: "isExecuting")
        mainRan.open()
    }

    func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        flags.withLock { $0 = (executing: false, finished: true) }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

@Suite(.sharesProcess) struct FinishTests {
    @Test(arguments: [false, true])
    func O5_O7_anOverriddenIsFinishedThatReadsFalseKeepsTheOperationUnfinished(_ combinesWithSuper: Bool) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let operation = OwnFlagsOperation(combinesWithSuper: combinesWithSuper)
        let completed = Latch()
        operation.completionBlock = { completed.open() }
        let dependentRan = Latch()
        let dependent = BlockOperation { dependentRan.open() }
        dependent.addDependency(operation)
        let nextRan = Latch()
        queue.addOperation(operation)
        queue.addOperation { nextRan.open() }
        OperationQueue().addOperation(dependent)
        guard waitFor(operation.mainRan, "main() of \(operation)") else { operation.finish(); return }

        // super.start() returned, and isFinished still reads false.
        #expect(!completed.wait(seconds: Deadline.quietSeconds), "\(runtimeUnderTest): completion block ran before isFinished read true")
        #expect(!dependentRan.isOpen, "\(runtimeUnderTest): dependent released before isFinished read true")
        #expect(!nextRan.isOpen, "\(runtimeUnderTest): the serial queue's slot was freed before isFinished read true")
        #expect(!operation.isFinished)
        #expect(queue.operationCount >= 1, "\(runtimeUnderTest): operationCount dropped before isFinished read true")

        operation.finish()
        waitFor(completed, "the completion block once isFinished reads true")
        waitFor(dependentRan, "the dependent once isFinished reads true")
        waitFor(nextRan, "the next operation of the serial queue")
        waitUntilAllOperationsAreFinished(queue)
        #expect(queue.operationCount == 0)
    }

    @Test(arguments: [false, true])
    func O5_byHandTheOperationFinishesWhenItsFlagSaysSo(_ combinesWithSuper: Bool) {
        let operation = OwnFlagsOperation(combinesWithSuper: combinesWithSuper)
        let completed = Latch()
        operation.completionBlock = { completed.open() }
        let dependent = SelfStartingOperation()
        dependent.addDependency(operation)
        operation.start()
        #expect(operation.mainRan.isOpen)
        #expect(!operation.isFinished)
        #expect(!completed.wait(seconds: Deadline.quietSeconds), "\(runtimeUnderTest): completion block ran before isFinished read true")
        #expect(!dependent.ran.isOpen)
        operation.finish()
        waitFor(completed, "the completion block once isFinished reads true")
        waitFor(dependent.ran, "the dependent once isFinished reads true")
    }
}
