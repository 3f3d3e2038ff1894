// LocalRunQueueTests.swift — op_local_run_queue_*: a worker's own run queue (owner push and pop,
// thieves steal half, generations keep a thief from taking another queue's tasks).
import Glibc
import OperationsCore
import Synchronization
import Testing

/// Item k of a test is the pointer value k+1 (never NULL).
private func item(_ k: Int) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: k + 1)! }
private func index(of item: UnsafeMutableRawPointer) -> Int { Int(bitPattern: item) - 1 }

/// Two tags standing for the queues a ring may serve (compared, never dereferenced).
private var tagA: UnsafeRawPointer { UnsafeRawPointer(bitPattern: 0xA0)! }
private var tagB: UnsafeRawPointer { UnsafeRawPointer(bitPattern: 0xB0)! }

/// The rings of one test, shared by its threads (which the test joins before destroying them).
private final class Rings: @unchecked Sendable {
    let raw: [OpaquePointer]
    init(_ count: Int) throws {
        raw = try (0..<count).map { _ in try #require(op_local_run_queue_create()) }
    }
    deinit { for ring in raw { op_local_run_queue_destroy(ring) } }
}

/// Pops everything, on the owner's thread.
private func drain(_ ring: OpaquePointer) -> [Int] {
    var result: [Int] = []
    while let popped = op_local_run_queue_pop(ring) { result.append(index(of: popped)) }
    return result
}

@Suite(.sharesProcess)
struct LocalRunQueueTests {
    @Test func theOwnerPopsInPushOrderAndAFullRingRefuses() throws {
        let rings = try Rings(1)
        let ring = rings.raw[0]
        op_local_run_queue_serve(ring, tagA)
        for k in 0..<256 { #expect(op_local_run_queue_push(ring, item(k)), "push \(k) of 256") }
        #expect(!op_local_run_queue_push(ring, item(256)), "a 257th item fits in a ring of 256")
        #expect(drain(ring) == Array(0..<256))
        #expect(op_local_run_queue_pop(ring) == nil)
        // Around the ring's end several times: positions wrap, order holds.
        var expected: [Int] = []
        var popped: [Int] = []
        for k in 0..<1000 {
            #expect(op_local_run_queue_push(ring, item(k)))
            expected.append(k)
            if k % 4 != 0, let got = op_local_run_queue_pop(ring) { popped.append(index(of: got)) } // never full
        }
        popped += drain(ring)
        #expect(popped == expected)
    }

    @Test func aThiefTakesTheOldestHalfRoundedUpInOrder() throws {
        let rings = try Rings(2)
        let (victim, thief) = (rings.raw[0], rings.raw[1])
        op_local_run_queue_serve(victim, tagA)
        op_local_run_queue_serve(thief, tagA)
        for k in 0..<7 { #expect(op_local_run_queue_push(victim, item(k))) }
        #expect(op_local_run_queue_steal(victim, thief, tagA) == 4)
        #expect(drain(thief) == [0, 1, 2, 3])
        #expect(drain(victim) == [4, 5, 6])
        #expect(op_local_run_queue_steal(victim, thief, tagA) == 0, "stole from an empty ring")
        #expect(op_local_run_queue_push(victim, item(7)))
        #expect(op_local_run_queue_steal(victim, thief, tagA) == 1)
        #expect(drain(thief) == [7])
    }

    @Test func aThiefTakesNothingServedForAnotherTagOrBeforeARetirement() throws {
        let rings = try Rings(2)
        let (victim, thief) = (rings.raw[0], rings.raw[1])
        op_local_run_queue_serve(thief, tagB)
        op_local_run_queue_serve(victim, tagA)
        #expect(op_local_run_queue_push(victim, item(0)))
        #expect(op_local_run_queue_steal(victim, thief, tagB) == 0, "took a task of another queue")
        #expect(drain(victim) == [0])
        op_local_run_queue_retire(victim)
        #expect(op_local_run_queue_steal(victim, thief, tagA) == 0, "a retired ring still served its old queue")
        op_local_run_queue_serve(victim, tagB)
        for k in 1...4 { #expect(op_local_run_queue_push(victim, item(k))) }
        #expect(op_local_run_queue_steal(victim, thief, tagA) == 0, "took a task of the ring's new queue for its old one")
        #expect(op_local_run_queue_steal(victim, thief, tagB) == 2)
        #expect(drain(thief) == [1, 2])
        #expect(drain(victim) == [3, 4])
    }

    @Test func theOwnerAndThreeThievesTakeEveryItemExactlyOnce() throws {
        // The owner pushes (refusals mean full: it pops one itself and tries again) and pops at
        // random; three thieves steal half into their own rings and pop those. Each item must
        // come out exactly once.
        let seed = testSeed()
        let total = scaled(200_000, tsan: 20_000)
        let thieves = 3
        let rings = try Rings(1 + thieves)
        for ring in rings.raw { op_local_run_queue_serve(ring, tagA) }
        let taken = Locked([[Int]](repeating: [], count: 1 + thieves))
        let pushedAll = Atomic<Bool>(false)
        let deadline = monotonicNs() + Limits.waitNs
        let joined = runThreads(1 + thieves) { thread in
            var local: [Int] = []
            if thread == 0 {
                var generator = SeededGenerator(seed: seed)
                let owner = rings.raw[0]
                var next = 0
                while next < total {
                    if op_local_run_queue_push(owner, item(next)) {
                        next += 1
                    } else if let got = op_local_run_queue_pop(owner) {
                        local.append(index(of: got))
                    }
                    if Int.random(in: 0..<4, using: &generator) == 0, let got = op_local_run_queue_pop(owner) {
                        local.append(index(of: got))
                    }
                }
                pushedAll.store(true, ordering: .releasing)
                local += drain(owner)
            } else {
                let own = rings.raw[thread]
                while monotonicNs() < deadline {
                    // Read before the steal: a steal that finds nothing after the owner pushed its
                    // last item means the owner takes the rest.
                    let done = pushedAll.load(ordering: .acquiring)
                    if op_local_run_queue_steal(rings.raw[0], own, tagA) > 0 {
                        local += drain(own)
                    } else if done {
                        break
                    }
                }
            }
            taken.withLock { $0[thread] = local }
        }
        try #require(joined, "threads did not finish within \(Limits.waitSeconds) s (seed \(seed))")
        let perConsumer = taken.withLock { $0 }
        var seen = [Int](repeating: 0, count: total)
        for list in perConsumer { for value in list where value >= 0 && value < total { seen[value] += 1 } }
        let missing = seen.indices.filter { seen[$0] == 0 }
        let duplicated = seen.indices.filter { seen[$0] > 1 }
        #expect(missing.isEmpty, "\(missing.count) of \(total) items never taken, e.g. \(missing.prefix(10)) (seed \(seed))")
        #expect(duplicated.isEmpty, "\(duplicated.count) items taken twice, e.g. \(duplicated.prefix(10)) (seed \(seed))")
        print("[LocalRunQueueTests] owner took \(perConsumer[0].count), thieves \(perConsumer[1...].map(\.count)) (seed \(seed))")
    }
}
