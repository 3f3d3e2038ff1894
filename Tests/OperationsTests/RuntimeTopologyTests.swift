// RuntimeTopologyTests.swift — OperationsRuntime.topology's container CPU limit fields and the
// width a default queue gets from them. The fake cgroups (quota → width) are tested in child
// processes in Tests/OperationsCoreTests/CgroupAndEnvironmentTests.swift; here the real one.
import Dispatch
import Glibc
import Operations
import OperationsCore
import Synchronization
import Testing

@Suite(.sharesProcess) struct RuntimeTopologyTests {
    @Test func containerCPUQuotaIsReportedWithTheDefaultWidth() {
        let topology = OperationsRuntime.topology
        #expect(topology.defaultWidth >= 1 && topology.defaultWidth <= topology.cpuCount, "\(topology)")
        if let quota = topology.cpuQuota {
            #expect(quota > 0, "\(topology)")
            let allowed = max(1, min(topology.cpuCount, Int(quota.rounded(.up))))
            #expect(topology.defaultWidth == allowed, "default width = min(CPUs, ceil(quota)):\n\(topology)")
        } else {
            #expect(topology.defaultWidth == topology.cpuCount, "no quota: one per CPU:\n\(topology)")
        }
    }

    /// Once a userInteractive operation ran, its workers' time slice is known: 100 µs where the
    /// kernel took it (Linux 6.12 and later), nil where it refused or ignored it; the same as the
    /// core reports.
    @Test func shortTimeSliceIsReportedOnceTheWorkersStarted() {
        let queue = OperationQueue()
        queue.qualityOfService = .userInteractive
        queue.addOperation {}
        queue.waitUntilAllOperationsAreFinished()
        let slice = OperationsRuntime.shortTimeSlice
        #expect(slice == nil || slice == .microseconds(100), "\(String(describing: slice))")
        #expect(slice == (op_runtime_short_time_slice() > 0 ? .microseconds(100) : nil))
    }

    /// `OperationsRuntime.clampWarnings` is the core's switch both ways (what it prints is
    /// tested in child processes: OperationsCoreTests' ClampWarningTests).
    @Test func clampWarningsSwitchIsTheCoresSwitch() {
        let before = OperationsRuntime.clampWarnings
        defer { OperationsRuntime.clampWarnings = before }
        #expect(before == op_runtime_clamp_warning())
        OperationsRuntime.clampWarnings = false
        #expect(!op_runtime_clamp_warning() && !OperationsRuntime.clampWarnings)
        OperationsRuntime.clampWarnings = true
        #expect(op_runtime_clamp_warning() && OperationsRuntime.clampWarnings)
    }

    /// A default-width queue never runs more operations at once than the reported width.
    @Test func defaultWidthQueueRunsAtMostDefaultWidthAtOnce() {
        let width = OperationsRuntime.topology.defaultWidth
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let queue = OperationQueue()
        queue.name = "default-width"
        for _ in 0..<(4 * width) {
            queue.addOperation {
                // relaxed: counters read after the queue drained (the wait orders them).
                let now = running.add(1, ordering: .relaxed).newValue
                var seen = most.load(ordering: .relaxed)
                while now > seen {
                    let (exchanged, original) = most.compareExchange(
                        expected: seen, desired: now, ordering: .relaxed)
                    if exchanged { break }
                    seen = original
                }
                // Busy, not asleep: a body asleep for a whole monitor tick gets its slot lent
                // (the queue's concurrency follows blocked bodies); this measures the width.
                let end = DispatchTime.now().uptimeNanoseconds + 5_000_000
                while DispatchTime.now().uptimeNanoseconds < end {}
                running.subtract(1, ordering: .relaxed)
            }
        }
        guard waitUntilAllOperationsAreFinished(queue) else { return }
        #expect(most.load(ordering: .relaxed) <= width, "ran \(most.load(ordering: .relaxed)) at once, width \(width)")
    }
}
