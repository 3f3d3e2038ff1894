// minimal_hand_off.swift — W11 for the smallest object Foundation's API allows, outside any
// library: a 40-byte class (a state word and the block) holding a closure that captures one
// reference, made on the main thread and released on one consumer thread through a spinning
// ring, as W11 does with our BlockOperation. Whatever an Operation library does, W1 makes one
// such object and one closure context per operation on the submitting CPU and frees them on a
// worker's: this is what that alone costs on a machine.
//
//   swiftc -O Perf/Probes/minimal_hand_off.swift -o /tmp/minimal-hand-off && /tmp/minimal-hand-off
//
// Prints the median ns per operation of 7 runs of 10^6 for that, and for the same objects made
// and released on one thread (not part of the package build).
import Glibc
import Synchronization

/// What W1's closures capture: a pointer to a count (the harness's `Counter`).
struct Tally: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int>
    @inline(never) func countOne() { pointer.pointee &+= 1 }
}

/// The smallest BlockOperation: header (16) + a state word (8) + the block (16) = 40 bytes.
final class MinimalOperation: @unchecked Sendable {
    var state: UInt = 0
    let block: @Sendable () -> Void
    init(block: @escaping @Sendable () -> Void) { self.block = block }
}

let capacity = 4096
let operationsPerRun = 1_000_000
nonisolated(unsafe) let slots = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: capacity)
slots.initialize(repeating: nil, count: capacity)
/// An index in a 64-byte object: the two indices are separate 80-byte heap blocks, never on
/// one cache line.
final class Index: Sendable { let value = Atomic<Int>(0); let pad: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0) }
/// Items published by the producer, and released by the consumer.
final class Indices: Sendable { let published = Index(), released = Index() }

func nanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// One run: ns per operation.
func run(_ tally: Tally) -> Double {
    let indices = Indices()
    let published = indices.published, released = indices.released
    var consumer = pthread_t()
    pthread_create(&consumer, nil, { raw in
        let indices = Unmanaged<Indices>.fromOpaque(raw!).takeRetainedValue()
        let published = indices.published, released = indices.released
        var next = 0
        while next < operationsPerRun {
            // acquiring: the slots up to `end`, and the objects in them, are fully written.
            let end = published.value.load(ordering: .acquiring)
            if end == next { sched_yield(); continue }
            while next < end {
                Unmanaged<MinimalOperation>.fromOpaque(slots[next & (capacity - 1)]!).release()
                next += 1
            }
            // releasing: the producer may reuse these slots.
            released.value.store(next, ordering: .releasing)
        }
        return nil
    }, Unmanaged.passRetained(indices).toOpaque())
    let start = nanoseconds()
    var free = capacity
    for i in 0..<operationsPerRun {
        while free == 0 {
            // acquiring: the consumer finished with the slots it released.
            free = capacity - (i - released.value.load(ordering: .acquiring))
            if free == 0 { sched_yield() }
        }
        slots[i & (capacity - 1)] = Unmanaged.passRetained(MinimalOperation { tally.countOne() }).toOpaque()
        free -= 1
        // releasing: publishes the slot and its object.
        published.value.store(i + 1, ordering: .releasing)
    }
    pthread_join(consumer, nil)
    return Double(nanoseconds() - start) / Double(operationsPerRun)
}

/// The same objects made and released on one thread: what a library that moved every release
/// back to the submitting thread would pay instead. ns per operation.
func runOnOneThread(_ tally: Tally) -> Double {
    let start = nanoseconds()
    for _ in 0..<operationsPerRun {
        let raw = Unmanaged.passRetained(MinimalOperation { tally.countOne() }).toOpaque()
        slots[0] = raw // through memory, so the pair is not optimised away
        Unmanaged<MinimalOperation>.fromOpaque(slots[0]!).release()
    }
    return Double(nanoseconds() - start) / Double(operationsPerRun)
}

let tally = Tally(pointer: .allocate(capacity: 1))
tally.pointer.initialize(to: 0)
for (label, body) in [("made on one thread, released on another", run), ("made and released on one thread", runOnOneThread)] {
    let times = (0..<7).map { _ in body(tally) }.sorted()
    let figures = [times[3], times[0], times[6]].map { String(Int($0.rounded())) }
    print("minimal operation \(label): median \(figures[0]) ns/op (min \(figures[1]), max \(figures[2]); 7 runs of \(operationsPerRun))")
}
precondition(tally.pointer.pointee == 0, "the blocks never run")
