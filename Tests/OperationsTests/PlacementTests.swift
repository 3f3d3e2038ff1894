// PlacementTests.swift — queues placed on chosen CPUs and NUMA nodes (issue 16; our addition,
// Foundation has no placement): a queue placed on one CPU runs its operations, jobs and
// TaskOperation bodies only on threads whose affinity is exactly that CPU, also the spares that
// stand in while its operations wait; refusals name what they refuse and change nothing; nil
// lifts it; placement composes with QoS (nice values) and dependencies across queues. The CPU
// share two placed queues get is the perf harness's (`--nice-share --same-cpu`), not a test's.
import Glibc
import Operations
import OperationsCore
import Testing

/// The CPUs the calling thread may run on.
func threadCPUs() -> [Int] {
    var buffer = [Int32](repeating: 0, count: 1024)
    let count = op_current_thread_cpus(&buffer, buffer.count)
    return buffer.prefix(count).map(Int.init)
}

/// Where a body ran: its thread's affinity and nice value.
struct RanOn: Sendable, Equatable {
    var cpus: [Int]
    var nice: Int32
    static func here() -> RanOn { RanOn(cpus: threadCPUs(), nice: threadNice()) }
}

@Suite(.sharesProcess) struct PlacementTests {
    /// The last usable CPU (on a 2-CPU machine, the second).
    static var chosenCPU: Int { OperationsRuntime.usableCPUs.last! }

    @Test func addition_aQueuePlacedOnOneCPURunsItsOperationsOnlyThere() async throws {
        let cpu = Self.chosenCPU
        let queue = OperationQueue()
        try queue.setCPUs([cpu])
        #expect(queue.cpus == [cpu])
        let places = Recorder<RanOn>()
        let operations = (0..<64).map { _ in BlockOperation { places.append(.here()) } }
        await completes("64 placed operations") { await queue.addOperationsAndWait(operations) }
        #expect(places.count == 64)
        for place in places.snapshot {
            #expect(place.cpus == [cpu], "an operation of a queue placed on CPU \(cpu) ran on a thread with affinity \(place.cpus)")
        }
    }

    @Test func addition_jobsAndTaskOperationBodiesFollowThePlacement() async throws {
        let cpu = Self.chosenCPU
        let queue = OperationQueue()
        try queue.setCPUs([cpu])
        let places = Recorder<RanOn>()
        queue.addOperation(TaskOperation {
            places.append(.here())
            try? await Task.sleep(nanoseconds: 1_000_000)
            places.append(.here())
        })
        await completes("a placed TaskOperation and a placed task") {
            await queue.waitUntilAllOperationsAreFinished()
            await Task(executorPreference: queue) {
                places.append(.here())
                await Task.yield()
                places.append(.here())
            }.value
        }
        #expect(places.count == 4)
        #expect(places.snapshot.allSatisfy { $0.cpus == [cpu] }, "\(places.snapshot.map(\.cpus))")
    }

    @Test func addition_refusalsNameWhatTheyRefuseAndChangeNothing() throws {
        let cpu = Self.chosenCPU
        let queue = OperationQueue()
        queue.name = "placed"
        try queue.setCPUs([cpu])
        let outside = (OperationsRuntime.usableCPUs.max() ?? 0) + 4096
        let error = #expect(throws: OperationQueue.PlacementError.self) { try queue.setCPUs([cpu, outside]) }
        #expect(error?.reason == .cpuNotUsable(outside))
        #expect(error.map { "\($0)".contains("CPU \(outside)") && "\($0)".contains("\"placed\"") } == true, "\(String(describing: error))")
        #expect(queue.cpus == [cpu], "a refused placement changed the queue's")
        let empty = #expect(throws: OperationQueue.PlacementError.self) { try queue.setCPUs([]) }
        #expect(empty?.reason == .emptyCPUSet)
        let node = #expect(throws: OperationQueue.PlacementError.self) { try queue.setNUMANode(4096) }
        #expect(node?.reason == .noSuchNUMANode(4096))
        #expect(node.map { "\($0)".contains("NUMA node 4096") } == true)
        #expect(queue.cpus == [cpu])
    }

    @Test func addition_nilLiftsThePlacementAndNodeZeroPlacesOnItsCPUs() async throws {
        let queue = OperationQueue()
        try queue.setCPUs([Self.chosenCPU])
        try queue.setCPUs(nil)
        #expect(queue.cpus == nil)
        let place = Locked<RanOn?>(nil)
        let operation = BlockOperation { place.withLock { $0 = .here() } }
        queue.addOperation(operation)
        await completes("an operation after lifting") { await operation.waitUntilFinished() }
        #expect(place.withLock { $0 } != nil, "an operation of the unplaced queue did not run")
        try queue.setNUMANode(0)
        let nodeCPUs = try #require(queue.cpus)
        #expect(!nodeCPUs.isEmpty && nodeCPUs.isSubset(of: Set(OperationsRuntime.usableCPUs)))
        if !OperationsRuntime.topology.usesNUMA { #expect(nodeCPUs == Set(OperationsRuntime.usableCPUs)) }
    }

    @Test(arguments: [QualityOfService.background, .utility, .userInitiated])
    func addition_twoQueuesOnOneCPURunThereAtTheirOwnNiceValues(qos: QualityOfService) async throws {
        let cpu = Self.chosenCPU
        let placed = OperationQueue()
        placed.qualityOfService = qos
        try placed.setCPUs([cpu])
        let other = OperationQueue()
        other.qualityOfService = .default
        try other.setCPUs([cpu])
        let places = Recorder<(String, RanOn)>()
        let a = BlockOperation { places.append(("placed", .here())) }
        let b = BlockOperation { places.append(("other", .here())) }
        b.addDependency(a) // across the two queues
        // `a` waits until `b` was added (and raised it): otherwise `a` may run before.
        placed.isSuspended = true
        placed.addOperation(a)
        other.addOperation(b)
        placed.isSuspended = false
        await completes("the two placed queues") { await b.waitUntilFinished() }
        let seen = places.snapshot
        #expect(seen.map(\.0) == ["placed", "other"])
        // `b` (default) depends on `a`: `a` is raised to default when below it (QoS promotion).
        let raised = qos == .background || qos == .utility
        #expect(seen.first?.1 == RanOn(cpus: [cpu], nice: expectedNice(raised ? .default : qos)))
        #expect(a.promotedQualityOfService == (raised ? .default : nil))
        #expect(seen.last?.1 == RanOn(cpus: [cpu], nice: expectedNice(.default)))
    }

    @Test func addition_sparesStandingInForAPlacedWaitKeepToThePlacement() async throws {
        let cpu = Self.chosenCPU
        let queue = OperationQueue()
        try queue.setCPUs([cpu])
        let places = Recorder<RanOn>()
        // Each level waits for the next, added to the same placed queue: with one worker on the
        // CPU, the levels below run on spares.
        let depth = 4
        let top = PlacedLevel.make(0, depth: depth, queue: queue, places: places)
        queue.addOperation(top)
        await completes("a nested wait \(depth) deep on a queue placed on one CPU") { await top.waitUntilFinished() }
        #expect(places.count == depth + 1)
        #expect(places.snapshot.allSatisfy { $0.cpus == [cpu] }, "a spare ran outside the placement: \(places.snapshot.map(\.cpus))")
    }
}

/// A level of a nested wait on one queue: records where it ran, then adds the next level to the
/// same queue and waits for it.
enum PlacedLevel {
    static func make(_ k: Int, depth: Int, queue: OperationQueue, places: Recorder<RanOn>) -> BlockOperation {
        BlockOperation {
            places.append(.here())
            if k < depth {
                queue.addOperations([make(k + 1, depth: depth, queue: queue, places: places)], waitUntilFinished: true)
            }
        }
    }
}
