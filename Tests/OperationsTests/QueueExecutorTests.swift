// QueueExecutorTests.swift — OperationQueue as a Swift concurrency executor (issue 15; our
// addition, Foundation's queues run no tasks or actors): `Task(executorPreference:)` and
// `withTaskExecutorPreference` jobs run as the queue's work (its workers, its QoS's nice value
// or their priority's, its width, its suspension, `OperationQueue.current`), jobs are not
// operations, and an actor runs on a serial queue, isolated, under 1000 concurrent calls.
import Glibc
import Operations
import OperationsCore
import Synchronization
import Testing

/// An actor whose executor is a serial OperationQueue. `record()` checks that no two calls
/// overlap and that each runs on the queue.
actor QueueBoundCounter {
    let queue: OperationQueue
    private(set) var count = 0
    private var inside = false
    private(set) var overlaps = 0
    private(set) var offQueue = 0

    init(queue: OperationQueue) { self.queue = queue }

    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }

    func record() {
        if inside { overlaps += 1 }
        inside = true
        if OperationQueue.current !== queue { offQueue += 1 }
        let before = count
        sched_yield() // widen the window a second caller would need to overlap
        count = before + 1
        inside = false
    }

    func snapshot() -> (count: Int, overlaps: Int, offQueue: Int) { (count, overlaps, offQueue) }
}

@Suite(.sharesProcess) struct QueueExecutorTests {
    @Test(arguments: [QualityOfService.background, .utility, .userInitiated])
    func addition_tasksPreferringTheQueueRunOnItAtItsNice(qos: QualityOfService) async {
        let queue = OperationQueue()
        queue.qualityOfService = qos
        let places = Recorder<BodyPlace>()
        await completes("a task preferring the queue") {
            await Task(executorPreference: queue, priority: .medium) {
                places.append(.here(queue))
                await Task.yield()
                places.append(.here(queue))
            }.value
            await withTaskExecutorPreference(queue) {
                places.append(.here(queue))
                try? await Task.sleep(nanoseconds: 1_000_000)
                places.append(.here(queue))
            }
        }
        #expect(places.snapshot.count == 4)
        for place in places.snapshot {
            #expect(place.onQueue, "OperationQueue.current was not the queue inside a job")
            #expect(place.nice == expectedNice(qos), "a job ran at nice \(place.nice), not \(qos)'s \(expectedNice(qos))")
        }
    }

    @Test(arguments: [(TaskPriority.high, QualityOfService.userInitiated), (.background, .background),
                      (.utility, .utility), (.medium, .utility)])
    func addition_aJobRunsAtTheQoSOfItsPriorityMediumMeaningTheQueues(priority: TaskPriority, qos: QualityOfService) async {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        let nice = Locked<Int32?>(nil)
        await completes("a task of priority \(priority)") {
            await Task(executorPreference: queue, priority: priority) { nice.withLock { $0 = threadNice() } }.value
        }
        #expect(nice.withLock { $0 } == expectedNice(qos))
    }

    @Test func addition_taskPriorityAndQualityOfServiceMapByRawValue() {
        #expect(QualityOfService(TaskPriority.high) == .userInitiated)
        #expect(QualityOfService(TaskPriority.userInitiated) == .userInitiated)
        #expect(QualityOfService(TaskPriority.medium) == .default)
        #expect(QualityOfService(TaskPriority.low) == .utility)
        #expect(QualityOfService(TaskPriority.utility) == .utility)
        #expect(QualityOfService(TaskPriority.background) == .background)
        #expect(QualityOfService(TaskPriority(rawValue: 0x21)) == .userInteractive)
        #expect(QualityOfService(TaskPriority(rawValue: 0)) == .default)
        for qos in [QualityOfService.userInteractive, .userInitiated, .default, .utility, .background] {
            #expect(QualityOfService(TaskPriority(qos)) == qos, "\(qos) does not survive the round trip")
        }
        #expect(TaskPriority(QualityOfService.userInteractive).rawValue == 0x21)
        #expect(TaskPriority(QualityOfService.default) == .medium)
    }

    @Test func addition_jobsCountAgainstTheWidth() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let gauge = ConcurrencyGauge()
        await completes("16 jobs on a queue of width 2") {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask(executorPreference: queue) {
                        gauge.enter()
                        usleep(2000) // work that holds the thread
                        gauge.leave()
                    }
                }
            }
        }
        #expect(gauge.maximum <= 2, "\(gauge.maximum) jobs ran at once on a queue of width 2")
        #expect(gauge.maximum >= 1)
    }

    @Test func addition_aSuspendedQueueHoldsItsJobs() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Latch()
        let task = Task(executorPreference: queue) { ran.open() }
        quietPeriod()
        #expect(!ran.isOpen, "a job ran on a suspended queue")
        queue.isSuspended = false
        await completes("the job after the queue resumed") { await task.value }
        #expect(ran.isOpen)
    }

    @Test func addition_jobsAreNotOperations() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = Latch()
        let started = Latch()
        let task = Task(executorPreference: queue) {
            started.open()
            gate.wait(for: 1, seconds: Limits.waitSeconds)
        }
        #expect(await completes("the job to start") { await waitOnThread(started) })
        #expect(queue.operations.isEmpty, "a job was listed as an operation: \(queue.operations)")
        queue.cancelAllOperations()
        let after = BlockOperation {}
        queue.addOperation(after)
        gate.open()
        await completes("the job and the operation after it") {
            await task.value
            await after.waitUntilFinished()
        }
        #expect(!after.isCancelled && after.isFinished)
    }

    @Test func addition_anActorOnASerialQueueIsIsolatedUnder1000ConcurrentCalls() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "actor-queue"
        let counter = QueueBoundCounter(queue: queue)
        await completes("1000 concurrent calls to the actor") {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<1000 { group.addTask { await counter.record() } }
            }
        }
        let result = await counter.snapshot()
        #expect(result.count == 1000)
        #expect(result.overlaps == 0, "\(result.overlaps) calls overlapped on the actor")
        #expect(result.offQueue == 0, "\(result.offQueue) calls ran off the queue")
    }

    @Test func addition_anOperationOnTheActorsSerialQueueMayAssumeItsIsolation() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let counter = QueueBoundCounter(queue: queue)
        let operation = BlockOperation {
            counter.assumeIsolated { $0.record() }
        }
        queue.addOperation(operation)
        await completes("the operation") { await operation.waitUntilFinished() }
        #expect(await counter.snapshot().count == 1)
    }
}
