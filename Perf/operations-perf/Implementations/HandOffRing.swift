// HandOffRing.swift — W11's machinery: a single-producer single-consumer ring that carries
// object pointers from the calling thread to one consumer thread, which releases them. No
// queue, no scheduling, no wake-ups: what is left is the memory cost of making an operation on
// one CPU and letting it go on another.
import Glibc
import Synchronization

/// One W11 run: `n` pointers made on the calling thread, released on a consumer thread.
final class HandOffRing: @unchecked Sendable {
    /// Slots in the ring (a power of two): deep enough that neither side waits in steady state.
    private static let capacity = 4096

    private let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Items the producer has published. Its own cache line: the consumer polls it while the
    /// producer writes slots.
    private let published = CacheLineAtomic()
    /// Items the consumer has released; the producer reads it only when the ring looks full.
    private let released = CacheLineAtomic()
    private let count: Int
    private let release: (UnsafeMutableRawPointer) -> Void
    private let counter: Counter

    private init(count: Int, counter: Counter, release: @escaping (UnsafeMutableRawPointer) -> Void) {
        self.count = count
        self.counter = counter
        self.release = release
        slots = .allocate(capacity: Self.capacity)
        slots.initialize(repeating: nil, count: Self.capacity)
    }

    deinit { slots.deallocate() }

    /// Makes `n` items with `make` on the calling thread and hands each to a consumer thread
    /// that calls `release` on it and counts one into `counter`. Returns the wall-clock ns from
    /// the first `make` until the consumer released the last item.
    static func run(
        _ n: Int, counter: Counter,
        make: () -> UnsafeMutableRawPointer,
        release: @escaping (UnsafeMutableRawPointer) -> Void
    ) throws -> UInt64 {
        let ring = HandOffRing(count: n, counter: counter, release: release)
        var consumer = pthread_t()
        let context = Unmanaged.passRetained(ring).toOpaque()
        let rc = pthread_create(&consumer, nil, { context in
            let ring = Unmanaged<HandOffRing>.fromOpaque(context!).takeRetainedValue()
            ring.consume()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<HandOffRing>.fromOpaque(context).release()
            throw PerfError.setup("W11: pthread_create failed (\(rc))")
        }
        let start = Clock.nanoseconds()
        ring.produce(make)
        pthread_join(consumer, nil)
        return Clock.nanoseconds() - start
    }

    private func produce(_ make: () -> UnsafeMutableRawPointer) {
        let mask = Self.capacity - 1
        var free = Self.capacity // slots known to be free; refreshed only when it runs out
        for i in 0..<count {
            while free == 0 {
                // acquiring: the consumer is done reading the slots it released.
                free = Self.capacity - (i - released.value.load(ordering: .acquiring))
                if free == 0 { sched_yield() }
            }
            slots[i & mask] = make()
            free -= 1
            // releasing: publishes the slot (and the object behind it) to the consumer.
            published.value.store(i + 1, ordering: .releasing)
        }
    }

    private func consume() {
        let mask = Self.capacity - 1
        var next = 0
        while next < count {
            // acquiring: pairs with the producer's releasing store, so the slots up to it and
            // the objects they point at are fully written.
            let end = published.value.load(ordering: .acquiring)
            if end == next {
                sched_yield()
                continue
            }
            while next < end {
                release(slots[next & mask]!)
                counter.countOne()
                next += 1
            }
            // releasing: the producer may reuse these slots once it sees this.
            released.value.store(next, ordering: .releasing)
        }
    }
}

/// An atomic index in an object of a full 64-byte cache line: two of them are separate heap
/// blocks of 80 bytes, so their values lie at least 80 bytes apart, never on one cache line.
private final class CacheLineAtomic: @unchecked Sendable {
    let value = Atomic<Int>(0)
    /// Padding: with the 16-byte object header and `value`, 64 bytes.
    private let padding: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0)
}
