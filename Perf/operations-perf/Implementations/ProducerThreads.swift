// ProducerThreads.swift — S2's producers: the calling thread and `producers − 1` threads of
// its own add their shares of the items at once, released together by one gate; the clock
// runs from the gate's opening until the competitor's wait returned.
import Glibc
import Synchronization

/// Runs several producer threads against one queue.
enum ProducerThreads {
    /// Starts `producers − 1` threads (outside the timed section) that wait at a gate, opens
    /// it, adds the calling thread's share, joins the others, then calls `wait`. `add(share)`
    /// runs once per producer with its share of `items` (they differ by one at most). Returns
    /// the ns from the gate's opening to `wait`'s return.
    static func run(
        _ producers: Int, items: Int, add: @escaping @Sendable (Int) -> Void, wait: () throws -> Void
    ) throws -> UInt64 {
        precondition(producers >= 1, "ProducerThreads: at least one producer")
        let gate = ProducerGate(add: add)
        func share(_ index: Int) -> Int { items / producers + (index < items % producers ? 1 : 0) }
        var threads: [pthread_t] = []
        for index in 1..<producers {
            let start = Unmanaged.passRetained(ProducerStart(gate: gate, share: share(index))).toOpaque()
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { argument in
                let start = Unmanaged<ProducerStart>.fromOpaque(argument!).takeRetainedValue()
                // acquire: pairs with the opening store; nothing to publish but the start.
                while !start.gate.isOpen.load(ordering: .acquiring) { sched_yield() }
                start.gate.add(start.share)
                return nil
            }, start)
            guard rc == 0 else {
                Unmanaged<ProducerStart>.fromOpaque(start).release()
                gate.isOpen.store(true, ordering: .releasing)
                for thread in threads { pthread_join(thread, nil) }
                throw PerfError.setup("pthread_create for producer \(index) failed: \(rc)")
            }
            threads.append(thread)
        }
        let start = Clock.nanoseconds()
        // release: the producers see everything set up before the gate opened.
        gate.isOpen.store(true, ordering: .releasing)
        add(share(0))
        for thread in threads { pthread_join(thread, nil) }
        try wait()
        return Clock.nanoseconds() - start
    }
}

/// The gate the producers wait at, and what they run.
private final class ProducerGate: Sendable {
    let isOpen = Atomic<Bool>(false)
    let add: @Sendable (Int) -> Void
    init(add: @escaping @Sendable (Int) -> Void) { self.add = add }
}

/// One producer thread's start: its gate and share.
private final class ProducerStart: Sendable {
    let gate: ProducerGate
    let share: Int
    init(gate: ProducerGate, share: Int) {
        self.gate = gate
        self.share = share
    }
}
