// ProbeSlots.swift — the storage W7 and W9 submit from: one probe_slot per item, the waits for
// their bodies, and the latencies they measured.
import DispatchBaselines
import Glibc

/// `count` zeroed probe slots; freed when the last reference goes (after every body finished).
final class ProbeSlots {
    let count: Int
    private let storage: UnsafeMutablePointer<probe_slot>

    /// Slots whose bodies record the nice they ran at when `recordNice`.
    init(count: Int, recordNice: Bool) {
        self.count = count
        storage = .allocate(capacity: max(count, 1))
        storage.initialize(repeating: probe_slot(), count: max(count, 1))
        if recordNice { for i in 0..<count { storage[i].record_nice = 1 } }
    }

    deinit { storage.deallocate() }

    subscript(_ index: Int) -> ProbeSlot { ProbeSlot(pointer: storage + index) }

    /// Whether slot `index`'s body has started.
    func started(_ index: Int) -> Bool { probe_started_ns(storage + index) != 0 }

    /// Spins (yielding) until slot `index`'s body has started.
    func spinUntilStarted(_ index: Int) {
        while !started(index) { sched_yield() }
    }

    /// Sleeps in 200 µs steps until slot `index`'s body has finished (a pacing wait: the
    /// latency is stamped in the bodies, and a tighter poll would compete with them).
    func waitFinished(_ index: Int) {
        while !probe_is_finished(storage + index) { usleep(200) }
    }

    /// The body's start stamp of slot `index` (0 until it started).
    func startedNs(_ index: Int) -> UInt64 { probe_started_ns(storage + index) }

    /// Sleeps in 50 µs steps until every body has finished.
    func waitAllFinished() {
        for i in 0..<count {
            while !probe_is_finished(storage + i) { usleep(50) }
        }
    }

    /// start − submit per slot, in ns (after `waitAllFinished`).
    var latencies: [UInt64] {
        (0..<count).map { storage[$0].started_ns &- storage[$0].submitted_ns }
    }

    /// How many bodies ran at each nice value (after `waitAllFinished`).
    var niceCounts: [Int32: Int] { niceCounts(first: count) }

    /// The same over the first `used` slots (W12 may use fewer than it made).
    func niceCounts(first used: Int) -> [Int32: Int] {
        var counts: [Int32: Int] = [:]
        for i in 0..<used { counts[storage[i].nice, default: 0] += 1 }
        return counts
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `deadlineNs`.
func sleepUntil(_ deadlineNs: UInt64) {
    var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}
