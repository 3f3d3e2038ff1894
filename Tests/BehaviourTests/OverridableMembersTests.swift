// OverridableMembersTests.swift — every member that Foundation declares `open` is overridable
// from outside the module (this file is compiled in a module of its own, without @testable),
// and the overrides are the ones the runtime calls. A compile test first: a subclass of each
// class that overrides each member, as real Foundation clients do (SEMANTICS O1, O5, D1).
import Testing

/// Overrides every open member of Operation, each calling super, and notes which ran.
final class EveryMemberOperation: Operation, @unchecked Sendable {
    let calls = Locked<Set<String>>([])
    func note(_ member: String) { calls.withLock { _ = $0.insert(member) } }
    func called(_ member: String) -> Bool { calls.withLock { $0.contains(member) } }

    override func start() { note("start"); super.start() }
    override func main() { note("main") }
    override var isCancelled: Bool { note("isCancelled"); return super.isCancelled }
    override func cancel() { note("cancel"); super.cancel() }
    override var isExecuting: Bool { note("isExecuting"); return super.isExecuting }
    override var isFinished: Bool { note("isFinished"); return super.isFinished }
    #if !BEHAVIOUR_ON_FOUNDATION
    // Apple's Operation has isConcurrent and threadPriority; Foundation on Linux lacks both.
    override var isConcurrent: Bool { note("isConcurrent"); return super.isConcurrent }
    override var threadPriority: Double {
        get { note("threadPriority"); return super.threadPriority }
        set { super.threadPriority = newValue }
    }
    #endif
    override var isAsynchronous: Bool { note("isAsynchronous"); return super.isAsynchronous }
    override var isReady: Bool { note("isReady"); return super.isReady }
    override func addDependency(_ operation: Operation) { note("addDependency"); super.addDependency(operation) }
    override func removeDependency(_ operation: Operation) { note("removeDependency"); super.removeDependency(operation) }
    override var dependencies: [Operation] { note("dependencies"); return super.dependencies }
    override var queuePriority: Operation.QueuePriority {
        get { note("queuePriority"); return super.queuePriority }
        set { super.queuePriority = newValue }
    }
    override var completionBlock: (@Sendable () -> Void)? {
        get { note("completionBlock"); return super.completionBlock }
        set { super.completionBlock = newValue }
    }
    override func waitUntilFinished() { note("waitUntilFinished"); super.waitUntilFinished() }
    override var qualityOfService: QualityOfService {
        get { note("qualityOfService"); return super.qualityOfService }
        set { super.qualityOfService = newValue }
    }
    override var name: String? {
        get { note("name"); return super.name }
        set { super.name = newValue }
    }
}

/// Overrides BlockOperation's own open members.
final class EveryMemberBlockOperation: BlockOperation, @unchecked Sendable {
    let added = Locked(0)
    override func addExecutionBlock(_ block: @escaping @Sendable () -> Void) {
        added.withLock { $0 += 1 }
        super.addExecutionBlock(block)
    }
    override var executionBlocks: [@Sendable () -> Void] { super.executionBlocks }
}

/// Overrides every open member of OperationQueue that Foundation lets a subclass override.
final class EveryMemberQueue: OperationQueue, @unchecked Sendable {
    let calls = Locked<Set<String>>([])
    func note(_ member: String) { calls.withLock { _ = $0.insert(member) } }
    func called(_ member: String) -> Bool { calls.withLock { $0.contains(member) } }

    override func addOperation(_ operation: Operation) { note("addOperation"); super.addOperation(operation) }
    override func addOperations(_ operations: [Operation], waitUntilFinished wait: Bool) {
        note("addOperations")
        super.addOperations(operations, waitUntilFinished: wait)
    }
    override func addOperation(_ block: @escaping @Sendable () -> Void) { note("addOperation(block)"); super.addOperation(block) }
    override func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) { note("addBarrierBlock"); super.addBarrierBlock(barrier) }
    override var maxConcurrentOperationCount: Int {
        get { super.maxConcurrentOperationCount }
        set { note("maxConcurrentOperationCount"); super.maxConcurrentOperationCount = newValue }
    }
    override var isSuspended: Bool {
        get { super.isSuspended }
        set { note("isSuspended"); super.isSuspended = newValue }
    }
    override var name: String? {
        get { super.name }
        set { note("name"); super.name = newValue }
    }
    override var qualityOfService: QualityOfService {
        get { super.qualityOfService }
        set { note("qualityOfService"); super.qualityOfService = newValue }
    }
    override func cancelAllOperations() { note("cancelAllOperations"); super.cancelAllOperations() }
    override func waitUntilAllOperationsAreFinished() { note("waitUntilAllOperationsAreFinished"); super.waitUntilAllOperationsAreFinished() }
    #if !BEHAVIOUR_ON_FOUNDATION
    // Foundation on Linux declares these two in an extension, where Swift allows no override;
    // Apple's are open properties of the class, and so are ours.
    override var operations: [Operation] { note("operations"); return super.operations }
    override var operationCount: Int { note("operationCount"); return super.operationCount }
    #endif
    override var progress: Progress { note("progress"); return super.progress }
    override class var current: OperationQueue? { super.current }
    override class var main: OperationQueue { super.main }
}

@Suite(.sharesProcess) struct OverridableMembersTests {
    @Test func O1_D1_everyOpenMemberOfOperationIsOverriddenAndTheQueueCallsTheOverrides() {
        let queue = OperationQueue()
        let dependency = BlockOperation {}
        let operation = EveryMemberOperation()
        operation.name = "every member"
        #expect(operation.name == "every member")
        operation.addDependency(dependency)
        let spare = BlockOperation {}
        spare.start() // finished: Foundation on Linux never counts down a removed unfinished one (D3)
        operation.addDependency(spare)
        operation.removeDependency(spare)
        #expect(operation.dependencies.count == 1)
        operation.queuePriority = .high
        #expect(operation.queuePriority == .high)
        #if !BEHAVIOUR_ON_FOUNDATION
        operation.threadPriority = 0.5
        #expect(operation.threadPriority == 0.5 && operation.called("threadPriority"))
        #expect(!operation.isConcurrent)
        #endif
        operation.qualityOfService = .utility
        #expect(operation.qualityOfService == .utility)
        let completed = Latch()
        operation.completionBlock = { completed.open() }
        #expect(operation.completionBlock != nil)
        #expect(!operation.isAsynchronous)
        queue.addOperation(operation)
        queue.addOperation(dependency)
        waitUntilFinished(operation)
        waitFor(completed, "the completion block of \(operation)")
        #expect(operation.isFinished && !operation.isExecuting && !operation.isCancelled)
        for member in ["start", "main", "addDependency", "removeDependency", "dependencies", "waitUntilFinished",
                       "isFinished", "name", "queuePriority", "qualityOfService", "completionBlock"] {
            #expect(operation.called(member), "\(runtimeUnderTest): the override of \(member) was not called")
        }
        let cancelled = EveryMemberOperation()
        cancelled.cancel()
        #expect(cancelled.isCancelled && cancelled.called("cancel") && cancelled.called("isCancelled"))
    }

    @Test func O6_blockOperationOverridesAreCalled() {
        let operation = EveryMemberBlockOperation()
        let ran = Latch()
        operation.addExecutionBlock { ran.arrive() }
        operation.addExecutionBlock { ran.arrive() }
        #expect(operation.added.withLock { $0 } == 2)
        #expect(operation.executionBlocks.count == 2)
        let queue = OperationQueue()
        queue.addOperation(operation)
        waitFor(ran, "both blocks of \(operation)", count: 2)
    }

    @Test func Q1_Q2_Q4_everyOpenMemberOfOperationQueueIsOverriddenAndCalled() {
        let queue = EveryMemberQueue()
        queue.name = "every member"
        queue.qualityOfService = .utility
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let ran = Latch()
        queue.addOperation(BlockOperation { ran.arrive() })
        queue.addOperation { ran.arrive() }
        queue.addOperations([BlockOperation { ran.arrive() }], waitUntilFinished: false)
        queue.addBarrierBlock { ran.arrive() }
        queue.isSuspended = false
        waitFor(ran, "three operations and a barrier", count: 4)
        waitUntilAllOperationsAreFinished(queue)
        queue.cancelAllOperations()
        #expect(queue.progress.totalUnitCount == 0)
        for member in ["progress", "name", "qualityOfService", "maxConcurrentOperationCount", "isSuspended", "addOperation",
                       "addOperation(block)", "addOperations", "addBarrierBlock", "waitUntilAllOperationsAreFinished",
                       "cancelAllOperations"] {
            #expect(queue.called(member), "\(runtimeUnderTest): the override of \(member) was not called")
        }
        #expect(EveryMemberQueue.main === OperationQueue.main)
    }
}
