// ReadyQueueTests.swift — op_ready_queue_*: the lock-free five-band MPMC FIFO.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// The queue handle, shared by the threads of one test (which destroys it after joining them).
private final class SharedReadyQueue: @unchecked Sendable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
}

/// What consumer threads share: how many items were popped in all, and each one's pop order.
private final class PopRecord: Sendable {
    let popped = Atomic<Int>(0)
    let pushed = Atomic<Int>(0)
    let lists: Locked<[[Int]]>
    init(consumers: Int) { lists = Locked(Array(repeating: [], count: consumers)) }
}

/// Item k of a test is the pointer value k+1 (never NULL).
private func item(_ k: Int) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: k + 1)! }
private func index(of item: UnsafeMutableRawPointer) -> Int { Int(bitPattern: item) - 1 }

/// One consumer thread's loop: pops until `record.popped` reaches `total` (counting every
/// consumer) or the deadline passes, and returns the indices it popped, in order.
private func consume(_ queue: OpaquePointer, until total: Int, record: PopRecord, deadline: Int64) -> [Int] {
    var local: [Int] = []
    var idle = 0
    while record.popped.load(ordering: .relaxed) < total {
        if let got = op_ready_queue_pop(queue) {
            local.append(index(of: got))
            record.popped.add(1, ordering: .relaxed)
        } else {
            idle += 1
            if idle % 256 == 0 && monotonicNs() > deadline { break }
            sched_yield()
        }
    }
    return local
}

private func band(_ raw: Int) -> op_priority_t { op_priority_t(rawValue: UInt32(raw)) }

/// Pops everything left, single-threaded.
private func drain(_ queue: OpaquePointer) -> [Int] {
    var result: [Int] = []
    while let popped = op_ready_queue_pop(queue) { result.append(index(of: popped)) }
    return result
}

@Suite(.sharesProcess)
struct ReadyQueueTests {
    /// 4 producers × 4 consumers, 200k distinct items over all five bands. With
    /// `consumersStartLate` the consumers wait until a quarter of the items is in, so the bands
    /// grow (new rings linked in) while consumers are draining the old ones.
    @Test(arguments: [false, true])
    func fourProducersAndFourConsumersPopEveryItemExactlyOnce(consumersStartLate: Bool) throws {
        let producers = 4, consumers = 4
        let perProducer = 50_000
        let total = producers * perProducer
        let queue = SharedReadyQueue(try #require(op_ready_queue_create()))
        let record = PopRecord(consumers: consumers)
        let quarterIn = Latch()
        let deadline = monotonicNs() + Limits.waitNs

        let joined = runThreads(producers + consumers) { thread in
            if thread < producers {
                for k in 0..<perProducer {
                    let value = thread * perProducer + k
                    op_ready_queue_push(queue.raw, item(value), band(value % Int(OP_PRIORITY_COUNT)))
                    if record.pushed.add(1, ordering: .relaxed).newValue == total / 4 { quarterIn.open() }
                }
            } else {
                if consumersStartLate && !quarterIn.wait() { return }
                let local = consume(queue.raw, until: total, record: record, deadline: deadline)
                record.lists.withLock { $0[thread - producers] = local }
            }
        }
        try #require(joined, "producer/consumer threads did not finish within \(Limits.waitSeconds) s")

        var seen = [Int](repeating: 0, count: total)
        var outOfRange: [Int] = []
        record.lists.withLock { perConsumer in
            for list in perConsumer {
                for value in list {
                    if value >= 0 && value < total { seen[value] += 1 } else { outOfRange.append(value) }
                }
            }
        }
        let missing = seen.indices.filter { seen[$0] == 0 }
        let duplicated = seen.indices.filter { seen[$0] > 1 }
        #expect(outOfRange.isEmpty, "popped values never pushed: \(outOfRange.prefix(10))")
        #expect(missing.isEmpty, "\(missing.count) of \(total) items never popped, e.g. \(missing.prefix(10))")
        #expect(duplicated.isEmpty, "\(duplicated.count) items popped more than once, e.g. \(duplicated.prefix(10))")
        #expect(op_ready_queue_pop(queue.raw) == nil, "the queue still holds items after all were popped")
        #expect(!op_ready_queue_maybe_nonempty(queue.raw), "maybe_nonempty is true for a drained queue")
        op_ready_queue_destroy(queue.raw)
    }

    @Test func eachBandIsFIFOForOneProducerWithConcurrentConsumers() throws {
        let seed = testSeed()
        var generator = SeededGenerator(seed: seed)
        let count = scaled(100_000, tsan: 50_000)
        let bands = (0..<count).map { _ in Int.random(in: 0..<Int(OP_PRIORITY_COUNT), using: &generator) }

        // Round 1: three consumers race. Each consumer's own pops must be increasing per band
        // (it can only see an item after every earlier item of that band left the queue).
        // Round 2: a single consumer; its whole pop sequence per band must be increasing.
        for consumers in [3, 1] {
            let queue = SharedReadyQueue(try #require(op_ready_queue_create()))
            let record = PopRecord(consumers: consumers)
            let deadline = monotonicNs() + Limits.waitNs
            let joined = runThreads(1 + consumers) { thread in
                if thread == 0 {
                    for sequence in 0..<count { op_ready_queue_push(queue.raw, item(sequence), band(bands[sequence])) }
                    return
                }
                let local = consume(queue.raw, until: count, record: record, deadline: deadline)
                record.lists.withLock { $0[thread - 1] = local }
            }
            try #require(joined, "threads did not finish within \(Limits.waitSeconds) s (seed \(seed))")

            let perConsumer = record.lists.withLock { $0 }
            #expect(perConsumer.map(\.count).reduce(0, +) == count,
                    "\(consumers) consumer(s) popped \(perConsumer.map(\.count)) items, expected \(count) in all (seed \(seed))")
            for (consumer, list) in perConsumer.enumerated() {
                var last = [Int](repeating: -1, count: Int(OP_PRIORITY_COUNT))
                var firstViolation: String?
                for value in list {
                    let b = bands[value]
                    if value <= last[b] && firstViolation == nil {
                        firstViolation = "band \(b): \(value) popped after \(last[b])"
                    }
                    last[b] = max(last[b], value)
                }
                #expect(firstViolation == nil,
                        "consumer \(consumer) of \(consumers) saw band order broken: \(firstViolation ?? "") (seed \(seed))")
            }
            op_ready_queue_destroy(queue.raw)
        }
    }

    @Test func popTakesTheHighestNonEmptyBandFirst() throws {
        let queue = try #require(op_ready_queue_create())
        defer { op_ready_queue_destroy(queue) }
        #expect(op_ready_queue_pop(queue) == nil, "a new queue is not empty")
        #expect(!op_ready_queue_maybe_nonempty(queue))

        // Three items per band, pushed interleaved, lowest band first.
        for round in 0..<3 {
            for b in 0..<Int(OP_PRIORITY_COUNT) { op_ready_queue_push(queue, item(b * 100 + round), band(b)) }
        }
        #expect(op_ready_queue_maybe_nonempty(queue))
        let expected = (0..<Int(OP_PRIORITY_COUNT)).reversed().flatMap { b in (0..<3).map { b * 100 + $0 } }
        #expect(drain(queue) == expected, "pop order must be band 4 … 0, FIFO within each band")

        // A higher band pushed later still overtakes what is waiting in lower ones.
        op_ready_queue_push(queue, item(1), OP_PRIORITY_VERY_LOW)
        op_ready_queue_push(queue, item(2), OP_PRIORITY_LOW)
        #expect(op_ready_queue_pop(queue).map(index(of:)) == 2)
        op_ready_queue_push(queue, item(3), OP_PRIORITY_VERY_HIGH)
        op_ready_queue_push(queue, item(4), OP_PRIORITY_NORMAL)
        #expect(drain(queue) == [3, 4, 1])
        #expect(op_ready_queue_pop(queue) == nil)
    }

    @Test func growsPastItsInitialCapacityWithoutDroppingOrReordering() throws {
        let queue = try #require(op_ready_queue_create())
        defer { op_ready_queue_destroy(queue) }
        let count = 100_000

        // 100k items into one band without popping: many growths of the ring chain.
        for k in 0..<count { op_ready_queue_push(queue, item(k), OP_PRIORITY_NORMAL) }
        let all = drain(queue)
        #expect(all.count == count, "pushed \(count), popped \(all.count)")
        #expect(all == Array(0..<count), "items came back out of order after growth")

        // The same across all bands at once, then again on the grown queue.
        for pass in 0..<2 {
            for k in 0..<count { op_ready_queue_push(queue, item(k), band(k % 5)) }
            let popped = drain(queue)
            let expected = (0..<5).reversed().flatMap { b in stride(from: b, to: count, by: 5) }
            #expect(popped == expected, "pass \(pass): five-band order broken after growth")
        }

        // Lapping the ring while it holds items: push 40, pop 20, many times, then drain.
        var next = 0, expectedNext = 0
        var ordered = true
        for _ in 0..<500 {
            for _ in 0..<40 { op_ready_queue_push(queue, item(next), OP_PRIORITY_HIGH); next += 1 }
            for _ in 0..<20 {
                guard let got = op_ready_queue_pop(queue) else { ordered = false; break }
                if index(of: got) != expectedNext { ordered = false }
                expectedNext += 1
            }
        }
        for value in drain(queue) {
            if value != expectedNext { ordered = false }
            expectedNext += 1
        }
        #expect(ordered && expectedNext == next, "interleaved push/pop lost or reordered items (\(expectedNext) of \(next))")
    }
}
